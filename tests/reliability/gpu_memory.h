/* GPU memory for the reliability tests, through the CUDA driver found at run time (libcuda.so.1),
 * so that the tests build and run where there is no CUDA at all. */
#ifndef EFACOLL_GPU_MEMORY_H
#define EFACOLL_GPU_MEMORY_H

#include <stddef.h>

/* Makes GPU local_rank % (GPUs) current (its primary context, the one the CUDA runtime and so
 * efacoll use). 0 on success; -1 with the reason in `why` (no driver, no GPU, ...). */
int gm_open(int local_rank, char* why, size_t n);
/* Makes that GPU current in the calling thread too (a new thread has no current context). */
void gm_bind_thread(void);
/* Device memory, or managed memory when `managed`; aborts when there is none left. Never NULL. */
void* gm_alloc(size_t bytes, int managed);
void gm_free(void* p);
/* Any direction: host, device and managed pointers alike (unified addressing). Synchronous. */
void gm_copy(void* dst, const void* src, size_t bytes);
/* Memory in use on the current GPU, by every process on it (total - free), in bytes. */
size_t gm_used_bytes(void);

#endif
