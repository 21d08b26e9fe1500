#!/usr/bin/env bash
# Every MPI test program must fail when efacoll is not loaded: otherwise a run whose preload path
# is wrong passes while testing only the host MPI. Each program runs here on 2 ranks without
# LD_PRELOAD and must exit non-zero saying efacoll is absent; efacoll_mpi_tests with
# EFACOLL_TEST_BASELINE=1 (a baseline run of the MPI alone, on purpose) must pass, so the
# failure is the absence and nothing else.
# Usage: without_efacoll_test.sh BUILD_DIR [MPIEXEC]. Prints "N passed, M failed".
set -u
build=${1:?usage: $0 BUILD_DIR [MPIEXEC]}
mpiexec=${2:-mpirun}
bin=$build/bin
passed=0 failed=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
check() {  # check OK MESSAGE
  if [[ "$1" == 1 ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $2"; fi
}
run() {  # run ENV... -- PROGRAM ARGS...: sets rc, output in $out
  local -a envs=()
  while [[ "$1" != -- ]]; do envs+=(-x "$1"); shift; done
  shift
  timeout 120 "$mpiexec" --allow-run-as-root --oversubscribe -np 2 \
    -x OMPI_MCA_pml=ob1 -x OMPI_MCA_btl=self,vader,tcp "${envs[@]}" "$@" >"$out" 2>&1
  rc=$?
}
# program, arguments, and what its output must say
cases=(
  "efacoll_mpi_tests||FAIL efacoll_ran: efacoll's C API not found"
  "efacoll_soak_test|--calls 40|FAIL efacoll_ran: efacoll's C API not found"
  "efacoll_threads_test|--threads 2 --calls 10|FAIL efacoll_ran: efacoll's C API not found"
  "efacoll_fork_test||FAIL efacoll_ran: efacoll's C API not found"
  "efacoll_mpi_setup_timeout_test|stopped|libefacoll.so is not loaded"
  "efacoll_mpi_fortran_test||FAIL: efacoll is not loaded"
  "efacoll_mpi_gpu_tests|--host-memory|libefacoll.so is not loaded"
  "efacoll_mpi_internal_error_test||libefacoll.so is not loaded"
  "efacoll_mpi_large_call_test||libefacoll.so is not loaded"
)
for c in "${cases[@]}"; do
  IFS='|' read -r prog args said <<<"$c"
  if [[ ! -x "$bin/$prog" ]]; then
    # built only where Fortran MPI is, and where CUDA is
    [[ "$prog" == efacoll_mpi_fortran_test || "$prog" == efacoll_mpi_gpu_tests ]] && continue
    check 0 "$bin/$prog not built"
    continue
  fi
  # shellcheck disable=SC2086  # the arguments split on purpose
  run EFACOLL_MPI_TEST_QUICK=1 -- "$bin/$prog" $args
  check $([[ $rc != 0 && $rc != 124 ]] && echo 1 || echo 0) "$prog without efacoll: exit $rc"
  check $(grep -qF -- "$said" "$out" && echo 1 || echo 0) "$prog without efacoll does not say '$said'"
  [[ $rc == 0 || $rc == 124 ]] && sed 's/^/    /' "$out" | tail -5
done
run EFACOLL_MPI_TEST_QUICK=1 EFACOLL_TEST_BASELINE=1 -- "$bin/efacoll_mpi_tests"
check $([[ $rc == 0 ]] && echo 1 || echo 0) "efacoll_mpi_tests as a baseline (EFACOLL_TEST_BASELINE=1): exit $rc"
[[ $rc != 0 ]] && grep FAIL "$out" | head -5 | sed 's/^/    /'
echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
