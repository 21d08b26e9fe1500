/* What a process holds: resident memory, and efacoll's own resources through its C API (found
 * at run time, so that the tests also run without the library preloaded). */
#ifndef EFACOLL_RESOURCES_H
#define EFACOLL_RESOURCES_H

#include "efacoll/efacoll.h"

/* VmRSS now and the peak (ru_maxrss), in KiB. */
long rss_now_kib(void);
long rss_peak_kib(void);
/* 0 with *out filled; -1 when efacoll is not preloaded or inactive. */
int efacoll_usage(efacoll_resource_usage* out);

#endif
