"""A kernel that keeps the GPU busy for a given time, for the benches that ask whether a CUDA
call waits for running kernels (ipc_close_wait.py, cuda_call_wait.py)."""
import cupy as cp

# Spins for `ns` nanoseconds of the GPU's global timer; reading `data` keeps that memory in use.
SPIN = cp.RawKernel(r"""
extern "C" __global__ void spin(unsigned long long ns, const int* data, int* sink) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  int acc = 0;
  do {
    if (data) acc += data[threadIdx.x];
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
  if (sink && acc == 0x7fffffff) *sink = acc;
}
""", "spin")


def launch_spin(stream, ms, data_ptr=0):
    with stream:
        SPIN((1,), (32,), (cp.uint64(int(ms * 1e6)), cp.intp(data_ptr), cp.intp(0)))
