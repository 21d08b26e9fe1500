#!/usr/bin/env python3
"""Whether cudaIpcCloseMemHandle waits for work on the GPU, as cudaFree does.

efacoll defers its own frees until none of its low-latency kernels is under way (a cudaFree
waits for the device, and such a kernel may wait for a peer that is itself waiting). Whether
closing a peer's mapping waits too decides whether the close must be deferred the same way
(src/engine/gpu_memory_to_free.h). Two processes (mpirun -np 2, one GPU or two): rank 0
exports an allocation, rank 1 maps it, then closes the mapping while

  idle            nothing runs on the GPU
  own kernel      rank 1's own kernel spins on a non-blocking stream
  exporter kernel rank 0's kernel spins (the memory's owner)
  kernel on it    rank 1's kernel spins while reading the mapped memory (last: where the close
                  does not wait, that kernel may fault)

and, as the control that shows a wait can be seen, cudaFree of an allocation of rank 1's own
(cudaMalloc'ed for it) while its own kernel spins. Each case N times; prints the median and
the largest close time in ms.

  mpirun -np 2 python3 bench/ipc_close_wait.py [--spin-ms 300] [--repeats 5]
"""
import statistics
import sys
import time

from gpu_ranks import comm, cp, launch_spin, rank, runtime, share_allocation, two_ranks_args


def main():
    args = two_ranks_args(spin_ms=300.0, repeats=5)
    if args is None:
        return 1
    exported, handle = share_allocation()  # noqa: F841 (kept alive while rank 1 maps it)
    stream = cp.cuda.Stream(non_blocking=True)
    launch_spin(stream, 1.0)  # loads the module before any timing
    stream.synchronize()
    # Last: if the close does not wait, that kernel may fault on the unmapped memory.
    cases = ["idle", "own kernel", "exporter kernel", "control: cudaFree", "kernel on it"]
    times = {c: [] for c in cases}
    for case in cases:
        for _ in range(args.repeats):
            mapped = runtime.ipcOpenMemHandle(handle) if rank == 1 else 0
            comm.Barrier()
            if case == "exporter kernel" and rank == 0:
                launch_spin(stream, args.spin_ms)
            if rank == 1:
                if case == "own kernel" or case == "control: cudaFree":
                    launch_spin(stream, args.spin_ms)
                elif case == "kernel on it":
                    launch_spin(stream, args.spin_ms, mapped)
                own_ptr = runtime.malloc(4 << 20) if case == "control: cudaFree" else 0
            comm.Barrier()  # the exporter's kernel is launched
            if rank == 1:
                time.sleep(0.01)  # the kernels are running
                t0 = time.perf_counter()
                if case == "control: cudaFree":
                    runtime.free(own_ptr)
                else:
                    runtime.ipcCloseMemHandle(mapped)
                times[case].append((time.perf_counter() - t0) * 1e3)
                if case == "control: cudaFree":
                    runtime.ipcCloseMemHandle(mapped)
            stream.synchronize()
            comm.Barrier()
    if rank == 1:
        props = runtime.getDeviceProperties(cp.cuda.Device().id)
        print(f"# {props['name'].decode()}, driver {runtime.driverGetVersion()}, "
              f"kernels spin {args.spin_ms:.0f} ms, {args.repeats} repeats, "
              f"{runtime.getDeviceCount()} GPU(s) visible")
        print(f"{'close while':<20} {'median ms':>10} {'max ms':>10}")
        for case in cases:
            print(f"{case:<20} {statistics.median(times[case]):>10.3f} "
                  f"{max(times[case]):>10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
