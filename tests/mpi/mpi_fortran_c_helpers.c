/* C helpers of the Fortran test: efacoll's counters (its C API, found with dlsym since the
 * library is preloaded, not linked) and GPU memory (the CUDA runtime, loaded where there is
 * one, so that the same binary runs on machines without a GPU). */
#include <dlfcn.h>
#include <mpi.h>
#include <stdlib.h>

#include "efacoll/efacoll.h"

typedef int (*get_counters_fn)(efacoll_collective, efacoll_counters*);

static long long counter(int coll, int engine) {
  get_counters_fn get = (get_counters_fn)dlsym(RTLD_DEFAULT, "efacoll_get_counters");
  efacoll_counters c;
  if (!get || get((efacoll_collective)coll, &c) != 0) return -1;
  return (long long)(engine ? c.engine_calls : c.mpi_calls);
}

/* Calls of a collective efacoll ran itself, or passed to MPI; -1 where efacoll is not loaded. */
long long efacoll_test_engine_calls(int coll) { return counter(coll, 1); }
long long efacoll_test_mpi_calls(int coll) { return counter(coll, 0); }

/* 1 where a stale copy of a freed communicator's handle is caught: Open MPI, whose handles are
 * pointers (MPICH's are pool indices it hands out again; see mpi_error_cases.c). */
int efacoll_test_stale_handles_caught(void) {
#if defined(OPEN_MPI) && OPEN_MPI
  return 1;
#else
  return 0;
#endif
}

static MPI_Comm kept_copy = MPI_COMM_NULL;

/* Keeps a C copy of a Fortran communicator handle, as mixed-language codes do. */
void efacoll_test_keep_c_copy(MPI_Fint comm) { kept_copy = MPI_Comm_f2c(comm); }

/* The error class of an int allreduce on the kept copy, with MPI_ERRORS_RETURN on
 * MPI_COMM_WORLD meanwhile (where an error on a handle that is no communicator goes); -1 when
 * the call changed its receive buffer. */
int efacoll_test_allreduce_on_kept_copy(void) {
  int in[4] = {1, 2, 3, 4}, out[4] = {-7, -7, -7, -7}, cls = MPI_SUCCESS;
  MPI_Errhandler was;
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &was);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const int rc = MPI_Allreduce(in, out, 4, MPI_INT, MPI_SUM, kept_copy);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, was);
  MPI_Errhandler_free(&was);
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  for (int i = 0; i < 4; ++i)
    if (out[i] != -7) return -1;
  return cls;
}

typedef int (*cuda_int_fn)(int);
typedef int (*cuda_count_fn)(int*);
typedef int (*cuda_malloc_fn)(void**, size_t);
typedef int (*cuda_free_fn)(void*);
typedef int (*cuda_memcpy_fn)(void*, const void*, size_t, int);

static void* cudart(void) {
  static void* lib;
  static const char* const names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12"};
  for (size_t i = 0; !lib && i < sizeof(names) / sizeof(names[0]); ++i)
    lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
  return lib;
}

/* A copy of `bytes` bytes of `host` in memory of GPU (local rank % GPUs); NULL where there is
 * no CUDA runtime or no GPU. */
void* efacoll_test_device_copy(const void* host, size_t bytes) {
  void* lib = cudart();
  if (!lib) return NULL;
  cuda_count_fn count = (cuda_count_fn)dlsym(lib, "cudaGetDeviceCount");
  cuda_int_fn set_device = (cuda_int_fn)dlsym(lib, "cudaSetDevice");
  cuda_malloc_fn cmalloc = (cuda_malloc_fn)dlsym(lib, "cudaMalloc");
  cuda_memcpy_fn cmemcpy = (cuda_memcpy_fn)dlsym(lib, "cudaMemcpy");
  const char* local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  int gpus = 0;
  void* p = NULL;
  if (!count || !set_device || !cmalloc || !cmemcpy || count(&gpus) != 0 || gpus < 1 ||
      set_device((local ? atoi(local) : 0) % gpus) != 0 || cmalloc(&p, bytes) != 0)
    return NULL;
  if (cmemcpy(p, host, bytes, 1 /* cudaMemcpyHostToDevice */) != 0) return NULL;
  return p;
}

/* 0 on success. */
int efacoll_test_copy_to_host(void* host, const void* device, size_t bytes) {
  cuda_memcpy_fn cmemcpy = (cuda_memcpy_fn)dlsym(cudart(), "cudaMemcpy");
  return cmemcpy ? cmemcpy(host, device, bytes, 2 /* cudaMemcpyDeviceToHost */) : -1;
}

void efacoll_test_device_free(void* device) {
  cuda_free_fn cfree = (cuda_free_fn)dlsym(cudart(), "cudaFree");
  if (cfree) cfree(device);
}
