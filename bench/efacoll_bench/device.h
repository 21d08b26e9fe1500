// GPU memory for --mem device, through the CUDA runtime where efacoll-bench is built with it.
// Built without CUDA (device_none.cc), gpu_select says so and nothing else is ever called.
#ifndef EFACOLL_BENCH_DEVICE_H
#define EFACOLL_BENCH_DEVICE_H

#include <cstddef>
#include <string>

namespace efacoll_bench {

// Makes GPU (local_rank % GPUs) current. Called before MPI_Init, so that efacoll starts on the
// GPU it will be given buffers of. false, with *error, where there is no usable GPU.
bool gpu_select(int local_rank, std::string* error);
int gpu_count();
std::string gpu_describe();  // "GPU 0: NVIDIA H200 (pci 0000:1a:00)"

void* gpu_alloc(size_t bytes);  // nullptr on failure
void gpu_free(void* p);
void* pinned_alloc(size_t bytes);  // page-locked host memory; nullptr on failure
void pinned_free(void* p);

// Each returns after the GPU is done, so that a collective on efacoll's own streams (which do
// not wait for this thread's) never races with it. false on failure: gpu_last_error says why.
bool gpu_copy(void* dst, const void* src, size_t bytes);  // any of host and GPU memory
bool gpu_fill(void* dst, unsigned char byte, size_t bytes);

void* gpu_stream_create();  // non-blocking; nullptr on failure
bool gpu_stream_synchronize(void* stream);
void gpu_stream_destroy(void* stream);

const char* gpu_last_error();

}  // namespace efacoll_bench

#endif
