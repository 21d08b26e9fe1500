#define _GNU_SOURCE /* RTLD_DEFAULT */
#include "resources.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

long rss_now_kib(void) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof(line), f)) {
    if (strncmp(line, "VmRSS:", 6) == 0) {
      sscanf(line + 6, "%ld", &kib);
      break;
    }
  }
  fclose(f);
  return kib;
}

long rss_peak_kib(void) {
  struct rusage u;
  return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_maxrss : -1;
}

int efacoll_usage(efacoll_resource_usage* out) {
  int (*get)(efacoll_resource_usage*) = NULL;
  *(void**)&get = dlsym(RTLD_DEFAULT, "efacoll_get_resource_usage");
  memset(out, 0, sizeof(*out));
  return get ? get(out) : -1;
}
