#!/usr/bin/env bash
# Ranks on separate "hosts": one network namespace each, joined by veth links to a switch
# namespace, so that every message crosses a link through the kernel's TCP/UDP. The links are
# impaired like `tc qdisc add dev fab0 root netem delay 5ms 2ms reorder 25% 50% loss 1%` (netem
# where the kernel has it, else efacoll_impair_hub doing the same in user space); every result
# must stay exact. With --cut, one host's link goes down during a collective: every rank must
# fail within the timeout with a clear error.
#
#   netns_test.sh FAULT_TEST HUB [--hosts N] [--provider tcp|udp] [--impair auto|netem|hub|none]
#                 [--sizes LIST] [--colls LIST] [--repeat R] [--cut] [--cut-only]
#                 [--cut-slack-ms T]   (how far past the 3 s timeout an error may come)
#
# Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN); exits 77 (skipped) where namespaces cannot be made.
# Only the namespaces' own addresses (10.211.0.0/24) are used; everything made is removed on
# exit, also on failure or interruption.
set -euo pipefail

fault_test=$1 hub=$2
shift 2
hosts=3 provider=tcp impair=auto sizes=8,4K,65539,1M colls=allreduce,allgather,reduce_scatter
repeat=1 cut=0 exact=1 cut_slack_ms=3000
while [ $# -gt 0 ]; do
  case $1 in
    --hosts) hosts=$2; shift ;;
    --provider) provider=$2; shift ;;
    --impair) impair=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --colls) colls=$2; shift ;;
    --repeat) repeat=$2; shift ;;
    --cut) cut=1 ;;
    --cut-only) cut=1 exact=0 ;;
    --cut-slack-ms) cut_slack_ms=$2; shift ;;
    *) echo "netns_test.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "network namespaces need root"
command -v ip >/dev/null || skip "no ip (iproute2)"

prefix="efc$$"  # unique per run: parallel runs do not meet
sw="${prefix}sw"
ns=()
for ((i = 0; i < hosts; i++)); do ns+=("${prefix}h$i"); done
hub_pid="" test_pid=""
workdir=$(mktemp -d "${TMPDIR:-/tmp}/efacoll-netns-XXXXXX")

cleanup() {
  [ -n "$test_pid" ] && kill "$test_pid" 2>/dev/null && wait "$test_pid" 2>/dev/null || true
  [ -n "$hub_pid" ] && kill "$hub_pid" 2>/dev/null && wait "$hub_pid" 2>/dev/null || true
  # Deleting a namespace deletes the links in it (and so both ends of each veth pair).
  for n in "$sw" "${ns[@]}"; do ip netns del "$n" 2>/dev/null || true; done
  rm -rf "$workdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# In the background and waited for: a signal to this script then runs its trap at once.
run_test() {
  "$fault_test" "$@" &
  test_pid=$!
  local rc=0
  wait "$test_pid" || rc=$?
  test_pid=""
  return $rc
}

# What a run killed outright (no trap runs on SIGKILL) left behind: namespaces of a dead pid.
for stale in $(ip netns list 2>/dev/null | sed -n 's/^\(efc[0-9]*\)\(sw\|h[0-9]*\)\b.*/\1\2/p'); do
  pid=${stale#efc}
  pid=${pid%%[sh]*}
  kill -0 "$pid" 2>/dev/null || ip netns del "$stale" 2>/dev/null || true
done
ip netns add "$sw" 2>/dev/null || skip "ip netns add is not permitted here"
for ((i = 0; i < hosts; i++)); do
  h=${ns[$i]}
  ip netns add "$h"
  ip -n "$h" link set lo up
  # IPv4 only: the provider then offers fab0 with the one address the test gave it.
  ip netns exec "$h" sh -c 'echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6;
                            echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6'
  ip -n "$sw" link add "p$i" type veth peer name fab0 netns "$h"
  ip -n "$h" addr add "10.211.0.$((i + 1))/24" dev fab0
  ip -n "$h" link set fab0 up
  ip -n "$sw" link set "p$i" up
done

netem="delay 5ms 2ms reorder 25% 50% loss 1%"
if [ "$impair" = auto ] || [ "$impair" = netem ]; then
  if ip netns exec "${ns[0]}" tc qdisc add dev fab0 root netem $netem 2>/dev/null; then
    impair=netem
  elif [ "$impair" = netem ]; then
    skip "tc netem is not available in this kernel"
  else
    impair=hub
  fi
fi
ports=$(seq -s, -f 'p%g' 0 $((hosts - 1)))
if [ "$impair" = hub ]; then
  echo "links: efacoll_impair_hub (this kernel has no netem): $netem"
  ip netns exec "$sw" "$hub" --ports "$ports" --delay-ms 5 --jitter-ms 2 --reorder-pct 25 \
    --loss-pct 1 --seed $$ --max-seconds 900 --ready-file "$workdir/hub" &
  hub_pid=$!
  for _ in $(seq 500); do [ -s "$workdir/hub" ] && break; sleep 0.01; done
  [ -s "$workdir/hub" ] || { echo "FAIL: efacoll_impair_hub did not start"; exit 1; }
else
  ip -n "$sw" link add br0 type bridge
  for ((i = 0; i < hosts; i++)); do ip -n "$sw" link set "p$i" master br0; done
  ip -n "$sw" link set br0 up
  if [ "$impair" = netem ]; then
    echo "links: tc netem $netem"
    for ((i = 1; i < hosts; i++)); do ip netns exec "${ns[$i]}" tc qdisc add dev fab0 root netem $netem; done
  else
    echo "links: bridge, no impairment"
  fi
fi

common=(--ranks "$hosts" --netns "$(IFS=,; echo "${ns[*]}")" --provider "$provider" --domain fab0)
# udp;ofi_rxd: the two-sided protocol and the ring (docs/decisions/0001-one-sided-protocol-automatic-only-where-writes-are-native.md: its one-sided writes
# and the recursive algorithms' concurrent writers are not reliable there).
common+=(--protocol send --algo ring)
status=0
if [ "$exact" = 1 ]; then
  echo "== exact results: $provider over impaired links, sizes $sizes"
  run_test "${common[@]}" --timeout-ms 30000 --chunk 64K --sizes "$sizes" --colls "$colls" \
    --repeat "$repeat" --deadline-s 400 || status=1
fi
if [ "$cut" = 1 ]; then
  victim=${ns[$((hosts - 1))]}
  echo "== link cut: ip -n $victim link set dev fab0 down during an allreduce"
  run_test "${common[@]}" --timeout-ms 3000 --chunk 64K --sizes 4K --fault-bytes 16M \
    --fault-loop-ms 60000 --command "ip -n $victim link set dev fab0 down" --fault-after-ms 500 \
    --slack-ms "$cut_slack_ms" --deadline-s 120 || status=1
fi
exit $status
