#!/usr/bin/env python3
"""mpi4py collectives on CuPy arrays under mpirun with libefacoll.so preloaded.

mpi4py (>= 3.1) hands MPI the device pointer of a CuPy array (__cuda_array_interface__);
efacoll intercepts MPI_Allreduce, MPI_Allgather and MPI_Reduce_scatter_block and runs them on
the GPU buffers. Results are compared with numpy references computed from every rank's data
(each rank regenerates it from the seeds). Where efacoll's C API is visible (preloaded), each
call must have been counted as run by efacoll.

Prints "N passed, M failed" on rank 0 (exit 1 when M > 0), or "SKIP: no GPU (<reason>)".
"""
import ctypes
import os
import sys
import traceback
import zlib

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
passed = failed = 0


def report(ok, name, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name} rank {rank}: {detail}", flush=True)
    return ok


def finish():
    # Host objects: efacoll passes these to MPI (host buffers), no counter is checked here.
    total_passed = comm.allreduce(passed, op=MPI.SUM)
    total_failed = comm.allreduce(failed, op=MPI.SUM)
    if rank == 0:
        print(f"{total_passed} passed, {total_failed} failed", flush=True)
    return 0 if total_failed == 0 else 1


def gpu_or_skip():
    """The cupy module with this rank's device selected, or None after printing SKIP."""
    why = ""
    cp = None
    try:
        import cupy as cp  # noqa: F401
        ndev = cp.cuda.runtime.getDeviceCount()
        if ndev == 0:
            why = "cupy.cuda.runtime.getDeviceCount() returned 0"
    except Exception as e:  # ImportError, CUDARuntimeError (no driver / no device)
        why = f"{type(e).__name__}: {e}"
    if not all(comm.allgather(why == "")):
        if rank == 0:
            print(f"SKIP: no GPU ({why or 'another rank has none'})", flush=True)
        return None
    local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", rank))
    device = local % ndev
    cp.cuda.Device(device).use()
    print(f"rank {rank}: GPU {device} of {ndev}", flush=True)
    return cp


class Counters:
    """efacoll_get_counters through ctypes, when libefacoll.so is in the process."""

    class _C(ctypes.Structure):
        _fields_ = [("engine_calls", ctypes.c_ulonglong), ("mpi_calls", ctypes.c_ulonglong),
                    ("engine_bytes", ctypes.c_ulonglong)]

    COLL = {"allreduce": 0, "allgather": 1, "reduce_scatter": 2}

    def __init__(self):
        try:
            self.fn = ctypes.CDLL(None).efacoll_get_counters
            self.fn.argtypes = [ctypes.c_int, ctypes.POINTER(self._C)]
            self.fn.restype = ctypes.c_int
        except (AttributeError, OSError):
            self.fn = None

    def engine_calls(self, coll):
        if self.fn is None:
            return None
        c = self._C()
        if self.fn(self.COLL[coll], ctypes.byref(c)) != 0:
            return None
        return c.engine_calls


def mpi_is_cuda_aware():
    try:
        query = ctypes.CDLL(None).MPIX_Query_cuda_support
    except (AttributeError, OSError):
        return False
    query.restype = ctypes.c_int
    return query() == 1


def data(seed, r, n, dtype, lo, hi):
    """Rank r's input: integers in [lo, hi] (exact in every dtype used)."""
    return np.random.default_rng([seed, r]).integers(lo, hi + 1, size=n).astype(dtype)


def compare(name, got, want):
    got = np.asarray(got)
    bad = np.flatnonzero(got != want)
    if bad.size == 0:
        return report(True, name)
    i = int(bad[0])
    return report(False, name, f"first bad index {i}: got {got.flat[i]!r}, expected "
                               f"{want.flat[i]!r} ({bad.size} of {want.size} differ)")


def main():
    cp = gpu_or_skip()
    if cp is None:
        return 0
    counters = Counters()
    if counters.fn is None:
        if not mpi_is_cuda_aware():
            report(False, "setup", "libefacoll.so is not preloaded and the MPI is not CUDA-aware: "
                   "device pointers would crash it (mpirun -x LD_PRELOAD=<build>/lib/libefacoll.so)")
            return finish()
        if rank == 0:
            print("NOTE: efacoll_get_counters not found (libefacoll.so not preloaded?): counter "
                  "checks skipped", flush=True)
    stream = cp.cuda.get_current_stream()

    def run(name, coll, call, want, out):
        before = counters.engine_calls(coll)
        stream.synchronize()  # the data must be on the device before MPI sees the pointer
        try:
            call()
        except Exception:
            report(False, name, "raised " + traceback.format_exc().replace("\n", " | "))
            return
        after = counters.engine_calls(coll)
        if before is not None:
            report(after == before + 1, name + " [counted by efacoll]",
                   f"engine_calls +{after - before}, want +1 (EFACOLL_STATS=1 says why)")
        compare(name, cp.asnumpy(out), want)

    cases = [("float32 sum", np.float32, MPI.SUM, -8, 8, np.sum),
             ("int64 max", np.int64, MPI.MAX, -1000, 1000, np.max)]
    for n in (1, 1001, (1 << 20) + 3):
        for label, dtype, op, lo, hi, fold in cases:
            seed = zlib.crc32(f"{label} {n}".encode())  # the same on every rank
            inputs = [data(seed, r, n, dtype, lo, hi) for r in range(size)]
            want = fold(np.stack(inputs), axis=0).astype(dtype)
            src = cp.asarray(inputs[rank])
            out = cp.full(n, 77, dtype=dtype)
            run(f"Allreduce {label} n={n}", "allreduce",
                lambda: comm.Allreduce(src, out, op=op), want, out)
            inout = cp.asarray(inputs[rank])
            run(f"Allreduce {label} n={n} in-place", "allreduce",
                lambda: comm.Allreduce(MPI.IN_PLACE, inout, op=op), want, inout)

            block = n
            full = [data(seed + 1, r, block * size, dtype, lo, hi) for r in range(size)]
            want_rs = fold(np.stack(full), axis=0).astype(dtype)[rank * block:(rank + 1) * block]
            src_rs = cp.asarray(full[rank])
            out_rs = cp.full(block, 77, dtype=dtype)
            run(f"Reduce_scatter_block {label} block={block}", "reduce_scatter",
                lambda: comm.Reduce_scatter_block(src_rs, out_rs, op=op), want_rs, out_rs)

        seed = zlib.crc32(f"allgather {n}".encode())
        parts = [data(seed, r, n, np.float32, -1000, 1000) for r in range(size)]
        src_g = cp.asarray(parts[rank])
        out_g = cp.full(n * size, 77, dtype=np.float32)
        run(f"Allgather float32 n={n}", "allgather",
            lambda: comm.Allgather(src_g, out_g), np.concatenate(parts), out_g)
    return finish()


if __name__ == "__main__":
    try:
        status = main()
    except Exception:
        print(f"FAIL rank {rank}: unexpected exception", flush=True)
        traceback.print_exc()
        sys.stderr.flush()
        comm.Abort(1)
    sys.exit(status)
