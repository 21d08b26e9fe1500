#!/usr/bin/env bash
# tsan_ours.awk decides which ThreadSanitizer reports fail `scripts/sanitize.sh tsan`. A report
# seen there (reports/wait_sync_reuse.txt: efacoll's argument check writing its own stack, which
# another thread last read where its stack was lost) is counted apart; changed in any one of the
# ways that make it a race of efacoll's own, it must count.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
report=$here/reports/wait_sync_reuse.txt
failed=0

# expect <efacoll reports> <reports counted apart> <what> <sed program>
expect() {
  local out ours apart
  out=$(sed "$4" "$report" | ${AWK:-awk} -f "$here/tsan_ours.awk")
  ours=$(echo "$out" | sed -n 's/^\([0-9]*\) of [0-9]* reports with efacoll code.*/\1/p')
  apart=$(echo "$out" | sed -n 's/^\([0-9]*\) report(s) of a thread.s own stack.*/\1/p')
  if [[ "$ours" != "$1" || "${apart:-0}" != "$2" ]]; then
    echo "FAIL: $3: $ours counted, ${apart:-0} apart (expected $1 and $2)"
    failed=1
  else
    echo "ok: $3"
  fi
}

expect 0 1 "as seen: an atomic read of the writer's stack by a thread whose stack was lost" ''
expect 0 1 "a plain read of 8 bytes instead (a condition signalled)" \
  's/Previous atomic read of size 1/Previous read of size 8/'
expect 1 0 "the reader's stack restored" \
  's|^    \[failed to restore the stack\]|    #0 efacoll::Engine::poll() /repo/src/engine/engine.cc:1 (libefacoll.so+0x1)|'
expect 1 0 "memory on the reader's stack" 's/Location is stack of thread T5\./Location is stack of thread T6./'
expect 1 0 "a heap block" 's/Location is stack of thread T5\./Location is heap block of size 64 at 0x1 allocated by thread T6:/'
expect 1 0 "a previous write" 's/Previous atomic read of size 1/Previous write of size 1/'
made_by='s|^    #1 main /repo/tests/reliability/threads_test.c:170 (efacoll_threads_test+0x391f)$|&\n    #1 efacoll::Engine::Engine() /repo/src/engine/engine.cc:68 (libefacoll.so+0x1)|'
expect 1 0 "a reader that efacoll made (its progress or watchdog thread)" "/^  Thread T6 (/,/^\$/ $made_by"
expect 0 1 "the writer made by efacoll, the reader not" "/^  Thread T5 (/,/^\$/ $made_by"
expect 1 0 "a named reader that efacoll made" "s/^  Thread T6 (/  Thread T6 'progress' (/; /^  Thread T6 /,/^\$/ $made_by"
expect 1 0 "a reader whose creation is unknown" '/^  Thread T6 (/,/^$/d'
expect 0 0 "no efacoll frame on top" 's|^    #0 check_count /repo/mpi_shim/shim_args.cc:88 (libefacoll.so+0x2a7e7)|    #0 <null> <null> (mca_pml_ob1.so+0x10)|'
exit $failed
