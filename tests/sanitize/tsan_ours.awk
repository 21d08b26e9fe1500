# A ThreadSanitizer report is efacoll's when the top frame (below the sanitizer's own) of one of
# its access or lock stacks is efacoll code; frames further down only say who called.
/WARNING: ThreadSanitizer/ { inrep = 1; ours = 0; section = "access"; first = 1; next }
inrep && /^  (Mutex M[0-9]+ .*created at|Location is|Thread T[0-9]+ .*created by)/ { section = "other" }
inrep && /^  [A-Z]/ && !/^  (Mutex M[0-9]+ .*created at|Location is|Thread T[0-9]+ .*created by)/ { section = "access"; first = 1 }
inrep && section == "access" && first && /#[0-9]+ / && !/libtsan/ {
  first = 0
  if (/(\/src\/|\/mpi_shim\/|\/include\/efacoll|libefacoll\.so)/) ours = 1
}
/^SUMMARY: ThreadSanitizer/ { if (inrep) { total++; if (ours) { n++; print } } inrep = 0 }
END { printf "%d of %d reports with efacoll code at the top of an access or lock stack\n", n, total }
