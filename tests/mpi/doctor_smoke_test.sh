#!/usr/bin/env bash
# efacoll-doctor on this machine, alone and under mpirun:
#   (a) text: a FAIL for efa where there is no EFA device, "no GPU" where there is none, exit 1;
#   (b) --json: parses (python3 -m json.tool), says the same, exit 1;
#   (c) mpirun -np 2: one report (local rank 0's), every line prefixed with the host name;
#   (d) mpirun -np 2 --json: exactly one JSON line, and it parses;
#   (e) bad usage exits 2, -h exits 0.
# Skipped (77) on a machine with EFA devices: the expected verdicts are those of a machine without.
# Usage: doctor_smoke_test.sh DOCTOR [MPIEXEC]
# Prints "N passed, M failed"; exits 1 if anything failed.
set -u

doctor=${1:?usage: $0 DOCTOR [MPIEXEC]}
mpiexec=${2:-mpirun}
for d in /sys/class/infiniband/*/device/vendor; do
  if [[ -e $d && $(cat "$d") == 0x1d0f ]]; then
    echo "this machine has EFA devices: skipped"
    exit 77
  fi
done
have_gpu=0
for d in /sys/bus/pci/devices/*; do
  if [[ $(cat "$d/vendor" 2>/dev/null) == 0x10de && $(cat "$d/class" 2>/dev/null) == 0x03* ]]; then
    have_gpu=1
  fi
done

. "$(dirname "${BASH_SOURCE[0]}")/script_checks.sh"

run() { # run <label> <command...>: output in $out, exit code in $rc
  local label=$1
  shift
  timeout 120 "$@" >"$out" 2>&1
  rc=$?
  echo "--- $label: exit $rc"
  sed 's/^/    /' "$out" | head -40
}
has() { grep -qE -- "$1" "$out" && echo 1 || echo 0; }
is() { [[ $1 == "$2" ]] && echo 1 || echo 0; }
mpi=("$mpiexec" --allow-run-as-root --oversubscribe -np 2)

run "alone" "$doctor"
check "$(is "$rc" 1)" "(a) exit $rc, expected 1 (no EFA here)"
check "$(has '^FAIL +efa +no EFA device')" "(a) no 'FAIL efa no EFA device' line"
if [[ $have_gpu == 0 ]]; then
  check "$(has '^INFO +gpus +no GPU')" "(a) no 'INFO gpus no GPU' line"
else
  check "$(has '^(OK|WARN) +gpu0 ')" "(a) a GPU here, but no gpu0 line"
fi
check "$(has '^summary: [1-9][0-9]* FAIL.*\(exit 1\)$')" "(a) no summary line with the FAIL count and exit 1"

run "alone --json" "$doctor" --json
check "$(is "$rc" 1)" "(b) --json: exit $rc, expected 1"
python3 -m json.tool "$out" >/dev/null
check "$(is $? 0)" "(b) --json output does not parse"
check "$(has '"name": "efa", "status": "FAIL", "finding": "no EFA device')" "(b) no efa FAIL"
check "$(has '"exit_status": 1')" "(b) summary without exit_status 1"

host=$(hostname)
run "mpirun -np 2" "${mpi[@]}" "$doctor"
check "$(is "$rc" 1)" "(c) mpirun: exit $rc, expected 1"
n=$(grep -c "^$host: efacoll-doctor " "$out")
check "$(is "$n" 1)" "(c) mpirun: $n reports, expected 1 (local rank 0 only)"
n=$(grep -cE "^$host: (OK|INFO|WARN|FAIL) " "$out")
m=$(grep -cE "^(OK|INFO|WARN|FAIL) " "$out")
check "$([[ $n -ge 5 && $m == 0 ]] && echo 1 || echo 0)" \
  "(c) mpirun: $n check lines prefixed with '$host: ', $m without"

run "mpirun -np 2 --json" "${mpi[@]}" "$doctor" --json
check "$(is "$rc" 1)" "(d) mpirun --json: exit $rc, expected 1"
n=$(grep -c '^{"version"' "$out")
check "$(is "$n" 1)" "(d) mpirun --json: $n JSON reports, expected 1"
grep '^{"version"' "$out" | python3 -m json.tool >/dev/null
check "$(is $? 0)" "(d) mpirun --json: the report does not parse"

run "bad usage" "$doctor" --no-such-option
check "$(is "$rc" 2)" "(e) bad usage: exit $rc, expected 2"
run "help" "$doctor" -h
check "$([[ $rc == 0 ]] && has '^usage: efacoll-doctor' || echo 0)" "(e) -h: exit $rc or no usage"

finish
