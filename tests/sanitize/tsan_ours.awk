# A ThreadSanitizer report is efacoll's when the top frame (below the sanitizer's own) of one of
# its access or lock stacks is efacoll code; frames further down only say who called.
#
# Except one shape, counted apart: memory on the writing thread's own stack that another thread
# last read where ThreadSanitizer lost that thread's stack. Under MPI_THREAD_MULTIPLE a thread
# waiting for an MPI request keeps Open MPI's wait object (ompi_wait_sync_t: a pthread mutex and
# condition) on its stack, and another thread's MPI call that progresses the request locks that
# mutex and signals it (an "atomic read of size 1", a "read of size 8", through the sanitizer's
# interceptors). The waiter leaves once Open MPI's own atomics say so, which the sanitizer cannot
# see, and the frame is then reused by whatever the thread calls next: efacoll's argument checks,
# in the reports seen (1 run in about 190 on tcp). The signalling thread is long past, so its
# stack is lost. efacoll hands no stack memory of a caller to another thread.
/WARNING: ThreadSanitizer/ {
  inrep = 1; ours = 0; section = "access"; first = 1; mops = 0
  writer = ""; lost_read = 0; own_stack = 0
  next
}
inrep && /^  (Mutex M[0-9]+ .*created at|Location is|Thread T[0-9]+ .*created by)/ { section = "other" }
inrep && /^  [A-Z]/ && !/^  (Mutex M[0-9]+ .*created at|Location is|Thread T[0-9]+ .*created by)/ {
  section = "access"; first = 1; mops++
  thread = /by main thread/ ? "main thread" : ""
  if (match($0, /by thread T[0-9]+/)) thread = substr($0, RSTART + 3, RLENGTH - 3)
  if (mops == 1) writer = thread
  reading = mops > 1 && /^  Previous (atomic )?read of size/ && thread != writer
}
inrep && section == "access" && first && reading && /\[failed to restore the stack\]/ {
  first = 0; lost_read = 1
}
inrep && /^  Location is stack of / && writer != "" && index($0, "stack of " writer ".") { own_stack = 1 }
inrep && section == "access" && first && /#[0-9]+ / && !/libtsan/ {
  first = 0
  if (/(\/src\/|\/mpi_shim\/|\/include\/efacoll|libefacoll\.so)/) ours = 1
}
/^SUMMARY: ThreadSanitizer/ {
  if (inrep) {
    total++
    if (ours && lost_read && own_stack) {
      reused++
    } else if (ours) {
      n++; print
    }
  }
  inrep = 0
}
END {
  if (reused) {
    printf "%d report(s) of a thread's own stack last read by a thread whose stack was lost " \
           "(Open MPI's request wait, reused: not counted)\n", reused
  }
  printf "%d of %d reports with efacoll code at the top of an access or lock stack\n", n, total
}
