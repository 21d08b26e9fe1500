#include <cuda_runtime_api.h>

#include <cstdio>

#include "device.h"

namespace efacoll_bench {
namespace {

cudaError_t last_error = cudaSuccess;

bool ok(cudaError_t err) {
  if (err != cudaSuccess) last_error = err;
  return err == cudaSuccess;
}

}  // namespace

bool gpu_select(int local_rank, std::string* error) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaSuccess && count == 0) err = cudaErrorNoDevice;
  if (err == cudaSuccess) err = cudaSetDevice(local_rank % count);
  if (err != cudaSuccess) *error = cudaGetErrorString(err);
  return err == cudaSuccess;
}

int gpu_count() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

std::string gpu_describe() {
  int device = -1;
  cudaDeviceProp prop;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaGetDeviceProperties(&prop, device) != cudaSuccess)
    return "no GPU";
  char text[192];
  std::snprintf(text, sizeof(text), "GPU %d: %.96s (pci %04x:%02x:%02x)", device, prop.name,
                prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
  return text;
}

void* gpu_alloc(size_t bytes) {
  void* p = nullptr;
  return ok(cudaMalloc(&p, bytes ? bytes : 1)) ? p : nullptr;
}

void gpu_free(void* p) { cudaFree(p); }

void* pinned_alloc(size_t bytes) {
  void* p = nullptr;
  return ok(cudaMallocHost(&p, bytes ? bytes : 1)) ? p : nullptr;
}

void pinned_free(void* p) { cudaFreeHost(p); }

bool gpu_copy(void* dst, const void* src, size_t bytes) {
  return ok(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault)) && ok(cudaDeviceSynchronize());
}

bool gpu_fill(void* dst, unsigned char byte, size_t bytes) {
  return ok(cudaMemset(dst, byte, bytes)) && ok(cudaDeviceSynchronize());
}

void* gpu_stream_create() {
  cudaStream_t s = nullptr;
  return ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)) ? s : nullptr;
}

bool gpu_stream_synchronize(void* stream) {
  return ok(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

void gpu_stream_destroy(void* stream) { cudaStreamDestroy(static_cast<cudaStream_t>(stream)); }

const char* gpu_last_error() { return cudaGetErrorString(last_error); }

}  // namespace efacoll_bench
