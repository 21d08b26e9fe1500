#!/usr/bin/env bash
# efacoll built against MPICH (the binary interface of Intel MPI and MVAPICH too) and run under
# its launcher: the MPI tests (every case compared with MPICH's own PMPI_*), the mismatch test,
# the Fortran callers' test, and calls past 2^31 bytes and elements (the large-count forms).
# MPICH's Fortran library calls the C entry points itself, so Fortran calls reach efacoll there
# without efacoll's own Fortran symbols (Open MPI only).
# Usage: mpich_test.sh SOURCE_DIR BUILD_DIR. Exit 0 pass, 1 fail, 77 skipped (no MPICH).
set -uo pipefail
# A clean environment (the launcher's ranks inherit it), check and finish.
. "$(dirname "${BASH_SOURCE[0]}")/script_checks.sh"
src=$1
build=$2
if ! command -v mpicc.mpich >/dev/null || ! command -v mpiexec.mpich >/dev/null; then
  echo "SKIP: MPICH is not installed (mpicc.mpich, mpiexec.mpich)"
  exit 77
fi
cmake -S "$src" -B "$build" -DEFACOLL_CUDA=OFF -DMPI_C_COMPILER=mpicc.mpich \
  -DMPI_CXX_COMPILER=mpicxx.mpich -DMPI_Fortran_COMPILER=mpif90.mpich \
  -DMPIEXEC_EXECUTABLE="$(command -v mpiexec.mpich)" >"$build.configure.log" 2>&1 ||
  { tail -20 "$build.configure.log"; exit 1; }
targets=(efacoll efacoll_mpi_tests efacoll_mpi_mismatch_test efacoll_mpi_large_call_test)
# (grep -q would close the pipe early, and pipefail count cmake's broken pipe as a failure)
if cmake --build "$build" --target help | grep -c efacoll_mpi_fortran_test >/dev/null; then
  targets+=(efacoll_mpi_fortran_test)
fi
cmake --build "$build" -j2 --target "${targets[@]}" >"$build.build.log" 2>&1 ||
  { tail -30 "$build.build.log"; exit 1; }

# run NAME RANKS PROVIDER PROGRAM [CHUNK]: efacoll's INFO line names MPICH, the program exits 0
# and prints no FAIL line. CHUNK: EFACOLL_CHUNK_SIZE (4096, many chunks a call; "tuned": the
# library's own).
run() {
  local name=$1 ranks=$2 provider=$3 program=$4 chunk=${5:-4096} log rc
  local chunk_env=(-genv EFACOLL_CHUNK_SIZE "$chunk")
  [[ $chunk == tuned ]] && chunk_env=()
  log="$build/$name.log"
  timeout 300 mpiexec.mpich -n "$ranks" -genv LD_PRELOAD "$build/lib/libefacoll.so" \
    -genv EFACOLL_PROVIDER "$provider" -genv EFACOLL_HOST_BUFFERS 1 -genv EFACOLL_TIMEOUT 30 \
    "${chunk_env[@]}" -genv EFACOLL_DEBUG INFO -genv EFACOLL_DEBUG_SUBSYS INIT \
    "$build/bin/$program" >"$log" 2>&1
  rc=$?
  if ((rc == 77)); then  # the program says why (too little memory)
    echo "skip $name: $(grep -m1 -i skip "$log")"
    return
  fi
  check "$(grep -q "MPI MPICH" "$log" && echo 1 || echo 0)" "$name: no efacoll INFO line naming MPICH"
  if ((rc == 0)) && ! grep -q "^FAIL" "$log"; then
    check 1 ""
    echo "ok $name: $(grep -m1 -E '[0-9]+ passed, 0 failed' "$log" || echo "exit status 0")"
  else
    check 0 "$name: exit status $rc"
    grep -m5 "^FAIL" "$log"
    tail -5 "$log"
  fi
}
run collectives.tcp.np3 3 tcp efacoll_mpi_tests
run collectives.shm.np4 4 shm efacoll_mpi_tests
run mismatch.tcp.np4 4 tcp efacoll_mpi_mismatch_test
[[ -x "$build/bin/efacoll_mpi_fortran_test" ]] && run fortran.tcp.np3 3 tcp efacoll_mpi_fortran_test
# Calls past 2^31 bytes, and MPICH's MPI_Allreduce_c past 2^31 elements.
run large_call.shm.np2 2 shm efacoll_mpi_large_call_test tuned
finish
