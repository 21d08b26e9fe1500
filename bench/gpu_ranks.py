"""MPI ranks with a GPU each (CuPy), and a kernel that keeps the GPU busy for a given time: for
the benches that ask whether a CUDA call waits for running kernels (ipc_close_wait.py,
cuda_call_wait.py). Where CuPy or a GPU is missing, importing this says SKIP and exits."""
import argparse
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()

try:
    import cupy as cp
    from cupy.cuda import runtime
    cp.cuda.Device(rank % runtime.getDeviceCount()).use()
except Exception as e:  # no CuPy, no GPU: say so instead of failing
    if rank == 0:
        print(f"SKIP: no GPU ({e})")
    sys.exit(0)

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


def two_ranks_args(spin_ms, repeats):
    """--spin-ms and --repeats, or None (rank 0 says why) unless there are exactly 2 ranks."""
    p = argparse.ArgumentParser()
    p.add_argument("--spin-ms", type=float, default=spin_ms)
    p.add_argument("--repeats", type=int, default=repeats)
    args = p.parse_args()
    if size != 2:
        if rank == 0:
            print("needs exactly 2 ranks")
        return None
    return args


def share_allocation():
    """A 4 MiB allocation of rank 0's (None elsewhere; keep it alive) and its IPC handle, on
    every rank."""
    exported = cp.zeros(1 << 20, dtype=cp.int32) if rank == 0 else None
    handle = comm.bcast(runtime.ipcGetMemHandle(exported.data.ptr) if rank == 0 else None, 0)
    return exported, handle
