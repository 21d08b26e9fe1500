#!/usr/bin/env bash
# Memory checks, each on a build of its own (so not part of scripts/test.sh):
#   asan      AddressSanitizer + LeakSanitizer over the unit tests and the MPI tests (tcp and shm,
#             2-4 ranks; a set-up given up on, whose buffers stay for MPI; mismatched calls on
#             tcp, udp and shm; and the reliability tests' short runs), in build-asan (CUDA off).
#   tsan      ThreadSanitizer over the unit tests where threads share engines and transports
#             (CUDA off, build-tsan), then the MPI_THREAD_MULTIPLE test on tcp and shm; Open MPI
#             is not built with it, so reports come from its code too: the MPI run fails only on
#             a report with efacoll code at the top of a stack (tests/sanitize/tsan_ours.awk,
#             which counts apart Open MPI's request waits on a thread's stack, reused after it).
#   valgrind  memcheck over a short soak (communicators created and freed, registrations on
#             every call, then MPI_Finalize) with the plain build's libefacoll.so preloaded;
#             fails on any block definitely lost that efacoll allocated.
# scripts/sanitize.sh [asan|tsan|valgrind|all]   (default all). ASAN_BUILD_DIR, BUILD_DIR, JOBS.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
what=${1:-all}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

run_asan() {
  local build=${ASAN_BUILD_DIR:-build-asan}
  cmake -S . -B "$build" -DEFACOLL_SANITIZE=ON -DEFACOLL_CUDA=OFF -DEFACOLL_BUILD_TESTS=ON \
    >/dev/null
  cmake --build "$build" -j"${JOBS:-2}" --target efacoll efacoll_unit_tests efacoll_mpi_tests \
    efacoll_soak_test efacoll_threads_test efacoll_fork_test efacoll_mpi_setup_timeout_test \
    efacoll_mpi_mismatch_test efacoll_bench
  # The Fortran callers' test, where a Fortran compiler was found.
  # (grep -q would close the pipe early, and pipefail count cmake's broken pipe as a failure)
  if cmake --build "$build" --target help | grep -c efacoll_mpi_fortran_test >/dev/null; then
    cmake --build "$build" -j"${JOBS:-2}" --target efacoll_mpi_fortran_test
  fi
  # Stack use after return too: a call's executor lives on its caller's stack, and other threads
  # may run its completions while it lends the lock; one that came after the call returned is
  # what ThreadSanitizer cannot tell from Open MPI's request waits (tsan_ours.awk).
  export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1
  export LSAN_OPTIONS=suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=1
  local t0=$SECONDS
  # Left out: on udp;ofi_rxd a truncated send never completes, the test skips without waiting
  # for it, and the transport then leaves its endpoint open on purpose (a provider still holding
  # operations must not be closed under them): that leak is the test's.
  "$build/bin/efacoll_unit_tests" --gtest_brief=1 \
    --gtest_filter='-Providers/FabricPair.TooLongMessageIsReportedAsTruncation/udp_send'
  echo "asan: unit tests clean in $((SECONDS - t0)) s"
  # Every test program carries the ASan runtime; the ranks preload libefacoll.so ahead of it,
  # which ASan accepts once told (it initialises from the program's preinit array, before any
  # library's constructor). mpirun's ranks on this host inherit these variables. Full stacks
  # (Open MPI has no frame pointers), and Open MPI's components kept loaded so that their frames
  # keep their names: the suppressions match Open MPI's functions.
  ASAN_OPTIONS+=:verify_asan_link_order=0:fast_unwind_on_malloc=0:malloc_context_size=30
  export OMPI_MCA_mca_base_component_disable_dlclose=1
  t0=$SECONDS
  (cd "$build" && ctest --output-on-failure --timeout 900 -R '^(mpi\.(tcp|shm|setup_timeout|fortran|mismatch)\.|reliability\.)' \
     -LE long)
  echo "asan: MPI tests clean in $((SECONDS - t0)) s"
}

run_tsan() {
  local build=${TSAN_BUILD_DIR:-build-tsan} prov log bad=0
  cmake -S . -B "$build" -DEFACOLL_SANITIZE_THREAD=ON -DEFACOLL_CUDA=OFF -DEFACOLL_BUILD_TESTS=ON \
    >/dev/null
  cmake --build "$build" -j"${JOBS:-2}" --target efacoll efacoll_unit_tests efacoll_threads_test
  local t0=$SECONDS
  TSAN_OPTIONS="halt_on_error=1" "$build/bin/efacoll_unit_tests" --gtest_brief=1 \
    --gtest_filter='ConcurrentComms.*:Mismatch.*:GiveUp.*:ProviderClock.*:ProviderWatchdog*:StoppedProcess.*:Calibration.*:RingCollectives.*:Hierarchical.*:Channels.*:MultiRail.*:SharedGpu.*:SharedGpuCandidates.*:LastCall.*'
  echo "tsan: unit tests clean in $((SECONDS - t0)) s"
  for prov in tcp shm; do
    log=$(mktemp)
    reports=$(mktemp -d)
    # One report file per process (log_path): two ranks' reports interleaved in one stream
    # would mix the stacks of different reports.
    mpiexec --allow-run-as-root --oversubscribe -np 2 \
      -x LD_PRELOAD="$root/$build/lib/libefacoll.so" -x EFACOLL_PROVIDER=$prov \
      -x EFACOLL_HOST_BUFFERS=1 -x OMPI_MCA_pml=ob1 -x OMPI_MCA_btl=self,tcp \
      -x OMPI_MCA_mca_base_component_disable_dlclose=1 \
      -x TSAN_OPTIONS="halt_on_error=0 exitcode=0 history_size=7 log_path=$reports/tsan suppressions=$root/tests/sanitize/tsan.supp" \
      "$root/$build/bin/efacoll_threads_test" --threads 4 --calls 150 --max-bytes 262144 >"$log" 2>&1 ||
      { tail -20 "$log"; bad=1; }
    grep RESULT "$log" || bad=1
    # Not through tee /dev/stderr: where stderr is a file, that reopens and truncates it.
    cat "$reports"/tsan.* 2>/dev/null | awk -f "$root/tests/sanitize/tsan_ours.awk" >"$log.ours"
    cat "$log.ours" >&2
    tail -1 "$log.ours" | grep -q '^0 of' || bad=1
  done
  [[ "$bad" == 0 ]]
}

run_valgrind() {
  local build=${BUILD_DIR:-build} out
  cmake --build "$build" -j"${JOBS:-2}" --target efacoll efacoll_soak_test
  out=$(mktemp -d)
  local t0=$SECONDS
  mpiexec --allow-run-as-root --oversubscribe -np 2 \
    -x LD_PRELOAD="$root/$build/lib/libefacoll.so" -x EFACOLL_PROVIDER=shm \
    -x EFACOLL_HOST_BUFFERS=1 -x EFACOLL_TIMEOUT=300 -x EFACOLL_PROTOCOL=rdma \
    -x EFACOLL_RDMA_THRESHOLD=2048 -x EFACOLL_FORCE_MR_LOCAL=1 -x EFACOLL_MR_CACHE_ENTRIES=2 \
    -x OMPI_MCA_pml=ob1 -x OMPI_MCA_btl=self,vader,tcp \
    valgrind --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=none \
    --num-callers=40 --fullpath-after= --log-file="$out/vg.%p.log" \
    "$root/$build/bin/efacoll_soak_test" --calls 300 --max-bytes 65536 --slots 3
  # A loss record (blank-line separated, once the ==pid== prefixes go) is efacoll's when, walking its stack up from the
  # allocation, an efacoll frame comes before any frame of the MPI library and its runtime
  # (whose own leaks pass through our MPI_Init and MPI_Finalize wrappers further up).
  local ours
  ours=$(awk -v repo="$root/" 'BEGIN { RS = ""; n = 0 }
    /definitely lost in loss record/ {
      k = split($0, line, "\n")
      for (i = 1; i <= k; i++) {
        if (line[i] !~ /(at|by) 0x/) continue
        if (index(line[i], repo "mpi_shim/") || index(line[i], repo "src/") ||
            index(line[i], "libefacoll")) { n++; print > "/dev/stderr"; break }
        if (line[i] ~ /PMPI_|ompi_|orte_|opal_|pmix|libmpi|libopen-|libevent|libhwloc/) break
      }
    }
    END { print n }' < <(sed 's/^==[0-9]*== \{0,1\}//' "$out"/vg.*.log))
  grep -h "definitely lost:" "$out"/vg.*.log
  echo "valgrind: $ours definitely-lost record(s) through libefacoll, $((SECONDS - t0)) s (logs in $out)"
  [[ "$ours" == 0 ]]
}

case "$what" in
  asan) run_asan ;;
  tsan) run_tsan ;;
  valgrind) run_valgrind ;;
  all) run_asan && run_tsan && run_valgrind ;;
  *) echo "usage: scripts/sanitize.sh [asan|tsan|valgrind|all]" >&2; exit 2 ;;
esac
