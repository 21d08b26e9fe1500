#include "gpu_memory.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* The driver API's own types, as cuda.h declares them on 64-bit hosts. */
typedef int cu_result;
typedef unsigned long long cu_ptr;

static struct {
  cu_result (*init)(unsigned);
  cu_result (*count)(int*);
  cu_result (*get)(int*, int);
  cu_result (*retain)(void**, int);
  cu_result (*set_current)(void*);
  cu_result (*alloc)(cu_ptr*, size_t);
  cu_result (*alloc_managed)(cu_ptr*, size_t, unsigned);
  cu_result (*free)(cu_ptr);
  cu_result (*copy)(cu_ptr, cu_ptr, size_t);
  cu_result (*info)(size_t*, size_t*);
  void* context;
} cu;

static int bind(void* lib, const char* name, void* fn) {
  void* p = dlsym(lib, name);
  *(void**)fn = p;
  return p != NULL;
}

int gm_open(int local_rank, char* why, size_t n) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(why, n, "no CUDA driver (%s)", dlerror());
    return -1;
  }
  if (!bind(lib, "cuInit", &cu.init) || !bind(lib, "cuDeviceGetCount", &cu.count) ||
      !bind(lib, "cuDeviceGet", &cu.get) || !bind(lib, "cuDevicePrimaryCtxRetain", &cu.retain) ||
      !bind(lib, "cuCtxSetCurrent", &cu.set_current) || !bind(lib, "cuMemAlloc_v2", &cu.alloc) ||
      !bind(lib, "cuMemAllocManaged", &cu.alloc_managed) || !bind(lib, "cuMemFree_v2", &cu.free) ||
      !bind(lib, "cuMemcpy", &cu.copy) || !bind(lib, "cuMemGetInfo_v2", &cu.info)) {
    snprintf(why, n, "the CUDA driver lacks a function this test uses");
    return -1;
  }
  int gpus = 0, dev = 0;
  void* ctx = NULL;
  cu_result rc = cu.init(0);
  if (rc == 0) rc = cu.count(&gpus);
  if (rc != 0 || gpus < 1) {
    snprintf(why, n, "no GPU (cuInit/cuDeviceGetCount: error %d, %d devices)", rc, gpus);
    return -1;
  }
  rc = cu.get(&dev, local_rank % gpus);
  if (rc == 0) rc = cu.retain(&ctx, dev);
  if (rc == 0) rc = cu.set_current(ctx);
  cu.context = ctx;
  if (rc != 0) {
    snprintf(why, n, "GPU %d: its context could not be made current (error %d)", local_rank % gpus,
             rc);
    return -1;
  }
  return 0;
}

static void check(cu_result rc, const char* what, size_t bytes) {
  if (rc == 0) return;
  if (bytes)
    fprintf(stderr, "%s of %zu bytes failed: CUDA driver error %d\n", what, bytes, rc);
  else
    fprintf(stderr, "%s failed: CUDA driver error %d\n", what, rc);
  abort();
}

void gm_bind_thread(void) { check(cu.set_current(cu.context), "cuCtxSetCurrent", 0); }

void* gm_alloc(size_t bytes, int managed) {
  cu_ptr p = 0;
  const size_t n = bytes ? bytes : 1;
  check(managed ? cu.alloc_managed(&p, n, 1 /* CU_MEM_ATTACH_GLOBAL */) : cu.alloc(&p, n),
        managed ? "cuMemAllocManaged" : "cuMemAlloc", n);
  return (void*)(size_t)p;
}

void gm_free(void* p) { check(cu.free((cu_ptr)(size_t)p), "cuMemFree", 0); }

void gm_copy(void* dst, const void* src, size_t bytes) {
  if (bytes) check(cu.copy((cu_ptr)(size_t)dst, (cu_ptr)(size_t)src, bytes), "cuMemcpy", bytes);
}

size_t gm_used_bytes(void) {
  size_t free_bytes = 0, total = 0;
  check(cu.info(&free_bytes, &total), "cuMemGetInfo", 0);
  return total - free_bytes;
}
