# A ThreadSanitizer report is efacoll's when the top frame (below the sanitizer's own) of one of
# its access or lock stacks is efacoll code; frames further down only say who called.
#
# Except one shape, counted apart and listed: efacoll's code writing the calling thread's own
# stack, which another thread last read where the sanitizer lost that thread's stack, a thread
# whose creation is known and was not efacoll's. Under MPI_THREAD_MULTIPLE a thread waiting for an MPI request keeps Open MPI's
# wait object (ompi_wait_sync_t: a pthread mutex and condition) on its stack, and another
# thread's MPI call that completes the request locks that mutex and signals it there (an "atomic
# read of size 1" and a "read of size 8", through the sanitizer's interceptors). The waiter
# leaves once Open MPI's own atomics say so, which the sanitizer cannot see, and its next call
# reuses the frame: efacoll's argument checks, in the reports seen (1 run in 200 on tcp). The
# signalling thread is long past, so its stack is lost.
# What this can hide: efacoll does let other threads reach a caller's stack (a call's executor,
# whose completions another thread's call may run while the lock is lent); one that touched it
# after the call returned, its own stack lost, would look the same. AddressSanitizer's
# stack-use-after-return check covers that case (scripts/sanitize.sh asan).
BEGIN { efacoll_frame = "(/src/|/mpi_shim/|/include/efacoll|libefacoll[.]so)" }
/WARNING: ThreadSanitizer/ {
  inrep = 1; ours = 0; section = "access"; first = 1; mops = 0
  writer = ""; reader = ""; lost_read = 0; own_stack = 0; made_by_us = 0; creation = ""
  creation_seen = 0
  next
}
inrep && /^  (Mutex M[0-9]+ .*created at|Location is|Thread T[0-9]+ .*created by)/ {
  section = "other"; creation = ""
  # ("thread T6" in an access's header; "Thread T6 (" or, named, "Thread T6 'name' (" in its
  # creation's)
  if (reader ~ /^thread T/) {
    head = "  Thread " substr(reader, 8)
    if (index($0, head " (") == 1 || index($0, head " '") == 1) creation = reader
  }
}
# The reading thread's creation stack: a thread efacoll made (progress, watchdog) is its own, and
# so is one whose creation is unknown. Broad on purpose: any efacoll frame in it (a thread a
# library started from inside efacoll's MPI_Init_thread too), or a GCC source path under src/.
inrep && creation != "" && /#[0-9]+ / && !/libtsan/ {
  creation_seen = 1
  if ($0 ~ efacoll_frame) made_by_us = 1
}
inrep && /^  [A-Z]/ && !/^  (Mutex M[0-9]+ .*created at|Location is|Thread T[0-9]+ .*created by)/ {
  section = "access"; first = 1; mops++
  thread = /by main thread/ ? "main thread" : ""
  if (match($0, /by thread T[0-9]+/)) thread = substr($0, RSTART + 3, RLENGTH - 3)
  if (mops == 1) writer = thread
  reading = mops > 1 && /^  Previous (atomic )?read of size/ && thread != writer
}
inrep && section == "access" && first && reading && /\[failed to restore the stack\]/ {
  first = 0; lost_read = 1; reader = thread
}
inrep && /^  Location is stack of / && writer != "" && index($0, "stack of " writer ".") {
  own_stack = 1
}
inrep && section == "access" && first && /#[0-9]+ / && !/libtsan/ {
  first = 0
  if ($0 ~ efacoll_frame) ours = 1
}
/^SUMMARY: ThreadSanitizer/ {
  if (inrep) {
    total++
    if (ours && lost_read && own_stack && creation_seen && !made_by_us) {
      reused++; print "counted apart: " $0
    } else if (ours) {
      n++; print
    }
  }
  inrep = 0
}
END {
  if (reused) {
    printf "%d report(s) of a thread's own stack last read by another thread whose stack was " \
           "lost (as Open MPI's request waits leave it): not counted\n", reused
  }
  printf "%d of %d reports with efacoll code at the top of an access or lock stack\n", n, total
}
