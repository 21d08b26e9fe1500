#!/usr/bin/env bash
# efacoll's provider policy, seen from mpirun: EFA or nothing unless another provider is named.
#   (a) EFACOLL_PROVIDER unset (no EFA here): the demo fails, rank 0 says once that the EFA
#       provider is not available and names EFACOLL_PROVIDER;
#   (b) EFACOLL_PROVIDER=tcp: it runs, warns that this is NOT EFA, and at EFACOLL_DEBUG=INFO
#       names the provider (tcp;ofi_rxm on libfabric 1.x, tcp on 2.x);
#   (c) EFACOLL_PROVIDER=nonexistent: it fails with a message naming that provider;
#   (d) EFACOLL_NIC: tcp's second domain (lo) is opened when named, with correct results; a
#       domain the provider lacks fails with a message listing those it has;
#   (e) one rank alone unable to start: every rank fails at MPI_Init, none hangs.
# Usage: provider_policy_test.sh BUILD_DIR [LIBEFACOLL DEMO [MPIEXEC]]
#   BUILD_DIR alone means BUILD_DIR/lib/libefacoll.so and BUILD_DIR/bin/efacoll_demo.
# Prints "N passed, M failed"; exits 1 if anything failed.
set -u

build=${1:?usage: $0 BUILD_DIR [LIBEFACOLL DEMO [MPIEXEC]]}
lib=${2:-$build/lib/libefacoll.so}
demo=${3:-$build/bin/efacoll_demo}
mpiexec=${4:-mpirun}
for f in "$lib" "$demo"; do
  if [[ ! -e $f ]]; then
    echo "missing $f (build targets efacoll and efacoll_demo)"
    echo "0 passed, 1 failed"
    exit 1
  fi
done

. "$(dirname "${BASH_SOURCE[0]}")/script_checks.sh"

run_demo() { # run_demo <label> [VAR=VALUE...]: output in $out, exit code in $rc
  local label=$1
  shift
  local args=()
  for e in "$@"; do args+=(-x "$e"); done
  timeout 120 "$mpiexec" --allow-run-as-root --oversubscribe -np 2 \
    -x LD_PRELOAD="$lib" -x EFACOLL_HOST_BUFFERS=1 \
    -x OMPI_MCA_pml=ob1 -x OMPI_MCA_btl=self,vader,tcp \
    "${args[@]}" "$demo" >"$out" 2>&1
  rc=$?
  echo "--- $label: exit $rc"
  sed 's/^/    /' "$out" | head -40
}

count_lines() { grep -cF -- "$1" "$out"; }
efacoll_lines() { grep -E '^[^ ]+:[0-9]+:-?[0-9]+ efacoll [A-Z]+ ' "$out" | grep -cF -- "$1"; }
efacoll_lines_not_rank0() {
  grep -E '^[^ ]+:[0-9]+:(-1|[1-9][0-9]*) efacoll [A-Z]+ ' "$out" | grep -cF -- "$1"
}
has() { grep -qF -- "$1" "$out" && echo 1 || echo 0; }
has_line_with() { grep -F -- "$1" "$out" | grep -qF -- "$2" && echo 1 || echo 0; }

# (a) EFA required by default, and it does not exist here.
run_demo "EFACOLL_PROVIDER unset"
check $([[ $rc != 0 && $rc != 124 ]] && echo 1 || echo 0) \
  "(a) without EFA the demo must fail (exit $rc; 124 = timed out)"
# Seen at least once: in efacoll's log or in MPI's fatal-error report, which quotes the error
# string (whichever rank's error handler aborts the job first may kill rank 0 before it logs).
n=$(count_lines "EFA provider is not available")
check $([[ $n -ge 1 ]] && echo 1 || echo 0) "(a) 'EFA provider is not available' not printed"
# Logged by efacoll ("host:pid:rank efacoll LEVEL SUBSYS text") at most once, and by rank 0 only.
n=$(efacoll_lines "EFA provider is not available")
check $([[ $n -le 1 ]] && echo 1 || echo 0) \
  "(a) 'EFA provider is not available' logged by efacoll on $n lines, expected at most once"
n=$(efacoll_lines_not_rank0 "EFA provider is not available")
check $([[ $n == 0 ]] && echo 1 || echo 0) \
  "(a) 'EFA provider is not available' logged by ranks other than 0 ($n lines)"
check "$(has EFACOLL_PROVIDER)" "(a) the message does not name EFACOLL_PROVIDER"

# (b) tcp chosen on purpose: runs, with a warning; INFO names the provider.
run_demo "EFACOLL_PROVIDER=tcp" EFACOLL_PROVIDER=tcp
check $([[ $rc == 0 ]] && echo 1 || echo 0) "(b) EFACOLL_PROVIDER=tcp: demo exit $rc"
check "$(has_line_with WARN "NOT EFA")" "(b) no WARN line saying NOT EFA"
n=$(efacoll_lines "NOT EFA")
check $([[ $n -le 1 ]] && echo 1 || echo 0) "(b) 'NOT EFA' warning on $n lines, expected once (rank 0)"
check "$(has "results correct")" "(b) the demo did not report correct results"
run_demo "EFACOLL_PROVIDER=tcp EFACOLL_DEBUG=INFO" EFACOLL_PROVIDER=tcp EFACOLL_DEBUG=INFO
check $([[ $rc == 0 ]] && echo 1 || echo 0) "(b) EFACOLL_PROVIDER=tcp EFACOLL_DEBUG=INFO: exit $rc"
# libfabric 1.x serves tcp's RDM through ofi_rxm; 2.x's tcp is RDM itself.
check "$(grep -F INFO "$out" | grep -qE 'provider tcp(;ofi_rxm)?,' && echo 1 || echo 0)" \
  "(b) no INFO line naming the provider (tcp or tcp;ofi_rxm)"

# (c) a provider that does not exist.
run_demo "EFACOLL_PROVIDER=nonexistent" EFACOLL_PROVIDER=nonexistent
check $([[ $rc != 0 && $rc != 124 ]] && echo 1 || echo 0) \
  "(c) EFACOLL_PROVIDER=nonexistent must fail (exit $rc; 124 = timed out)"
check "$(has "nonexistent")" "(c) the message does not name the provider 'nonexistent'"
check "$(has "EFACOLL_PROVIDER=nonexistent is not available")" \
  "(c) no 'EFACOLL_PROVIDER=nonexistent is not available' message"

# (d) the NIC (libfabric domain): tcp offers eth0-like interfaces and lo; name lo.
run_demo "EFACOLL_NIC=lo" EFACOLL_PROVIDER=tcp EFACOLL_NIC=lo EFACOLL_DEBUG=INFO
check $([[ $rc == 0 ]] && echo 1 || echo 0) "(d) EFACOLL_NIC=lo: demo exit $rc"
check "$(has_line_with "provider tcp" "domain lo,")" "(d) the INFO line does not say domain lo"
check "$(has_line_with "NIC: domain lo" "named by EFACOLL_NIC")" "(d) no 'NIC: domain lo' line"
check "$(has "results correct")" "(d) EFACOLL_NIC=lo: the demo did not report correct results"
run_demo "EFACOLL_NIC=nosuchnic" EFACOLL_PROVIDER=tcp EFACOLL_NIC=nosuchnic
check $([[ $rc != 0 && $rc != 124 ]] && echo 1 || echo 0) \
  "(d) EFACOLL_NIC=nosuchnic must fail (exit $rc; 124 = timed out)"
check "$(has "EFACOLL_NIC=nosuchnic: provider tcp has no such domain (it offers: ")" \
  "(d) the failure does not say which domains tcp offers"

# (e) one rank alone cannot start (its own EFACOLL_NIC names no domain): every rank must fail
# at MPI_Init, none wait in its first collective for the rank that failed.
out_e() {
  # Open MPI applies -x to its own app context only: each context gets the whole list.
  local env=(-x LD_PRELOAD="$lib" -x EFACOLL_HOST_BUFFERS=1 -x EFACOLL_PROVIDER=tcp
    -x OMPI_MCA_pml=ob1 -x OMPI_MCA_btl=self,vader,tcp)
  timeout 120 "$mpiexec" --allow-run-as-root --oversubscribe \
    -np 1 "${env[@]}" "$demo" : -np 1 "${env[@]}" -x EFACOLL_NIC=nosuchnic "$demo" >"$out" 2>&1
}
out_e
rc=$?
echo "--- one rank with EFACOLL_NIC=nosuchnic: exit $rc"
sed 's/^/    /' "$out" | head -40
check $([[ $rc != 0 && $rc != 124 ]] && echo 1 || echo 0) \
  "(e) one rank unable to start must fail the job, not hang (exit $rc; 124 = timed out)"
check "$(has "EFACOLL_NIC=nosuchnic: provider tcp has no such domain")" \
  "(e) the failing rank does not say why"
check "$(has "another rank could not start efacoll")" \
  "(e) the rank that could start does not say that another could not"

finish
