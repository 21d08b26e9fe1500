#!/usr/bin/env python3
"""Which CUDA calls that efacoll makes inside a collective wait for this process's kernels.

A call that waits for the whole device waits for efacoll's low-latency kernels of other threads
too, and such a kernel may wait for a peer that waits for this thread (gpu_memory_to_free.h):
cudaFree and cudaIpcCloseMemHandle do (ipc_close_wait.py), so efacoll defers them. This asks
the same of the calls it makes during a collective. Two processes (mpirun -np 2, one GPU or
two): rank 0 exports an allocation; rank 1 times each call while

  idle           nothing runs on the GPU
  own, apart     rank 1's kernel spins on a non-blocking stream
  own, blocking  rank 1's kernel spins on a blocking stream (as the kernel of a low-latency call
                 that keeps the engine's lock does; one that lends it runs on a non-blocking
                 stream)
  exporter       rank 0's kernel spins (only for the open of its memory)

Calls: cudaIpcOpenMemHandle (rank 0's memory), cudaIpcGetMemHandle (of a new allocation),
cudaMalloc and cudaHostAlloc (4 MiB; default flags, where efacoll's are portable and sometimes
mapped), stream and event creation, the runtime's cudaPointerGetAttributes (efacoll asks the
driver's cuPointerGetAttributes), cudaStreamSynchronize of the legacy default stream (nothing
queued there), and a 4 KiB copy on a non-blocking stream of its own. Each N times; prints
median and largest times in ms.

  mpirun -np 2 python3 bench/cuda_call_wait.py [--spin-ms 200] [--repeats 3]
"""
import statistics
import sys
import time

from gpu_ranks import comm, cp, launch_spin, rank, runtime, share_allocation, two_ranks_args

MIB4 = 4 << 20


class Probe:
    """One CUDA call: prepare() outside the timing, call(prepared) timed, tidy(result, prepared)
    after the kernels."""

    def __init__(self, name, call, prepare=None, tidy=None, with_exporter=False):
        self.name, self.call, self.prepare, self.tidy = name, call, prepare, tidy
        self.with_exporter = with_exporter


def probes(handle, scratch, copy_stream):
    def ipc_open(_):
        return runtime.ipcOpenMemHandle(handle)

    def copy(_):
        runtime.memcpyAsync(scratch + 4096, scratch, 4096, runtime.memcpyDeviceToDevice,
                            copy_stream.ptr)
        copy_stream.synchronize()

    return [
        Probe("cudaIpcOpenMemHandle", ipc_open, tidy=lambda out, _: runtime.ipcCloseMemHandle(out),
              with_exporter=True),
        Probe("cudaIpcGetMemHandle", runtime.ipcGetMemHandle,
              prepare=lambda: runtime.malloc(MIB4), tidy=lambda _, arg: runtime.free(arg)),
        Probe("cudaMalloc 4 MiB", lambda _: runtime.malloc(MIB4),
              tidy=lambda out, _: runtime.free(out)),
        Probe("cudaHostAlloc 4 MiB", lambda _: runtime.hostAlloc(MIB4, 0),
              tidy=lambda out, _: runtime.freeHost(out)),
        Probe("cudaStreamCreate", lambda _: runtime.streamCreateWithFlags(1),
              tidy=lambda out, _: runtime.streamDestroy(out)),
        Probe("cudaEventCreate", lambda _: runtime.eventCreateWithFlags(2),
              tidy=lambda out, _: runtime.eventDestroy(out)),
        Probe("cudaPointerGetAttrs", lambda _: runtime.pointerGetAttributes(scratch)),
        Probe("sync legacy stream", lambda _: runtime.streamSynchronize(runtime.streamLegacy)),
        Probe("4 KiB copy, own stream", copy),
    ]


def main():
    args = two_ranks_args(spin_ms=200.0, repeats=3)
    if args is None:
        return 1
    exported, handle = share_allocation()  # noqa: F841 (kept alive while rank 1 maps it)
    apart = cp.cuda.Stream(non_blocking=True)
    blocking = cp.cuda.Stream(non_blocking=False)
    copy_stream = cp.cuda.Stream(non_blocking=True)
    scratch = cp.zeros(8192, dtype=cp.uint8)
    launch_spin(apart, 1.0)  # loads the module before any timing
    apart.synchronize()
    places = ["idle", "own, apart", "own, blocking", "exporter"]
    table = []
    for probe in probes(handle, scratch.data.ptr, copy_stream):
        row = {}
        for place in places:
            if place == "exporter" and not probe.with_exporter:
                continue
            times = []
            for _ in range(args.repeats):
                arg = probe.prepare() if rank == 1 and probe.prepare else None
                comm.Barrier()
                if place == "exporter" and rank == 0:
                    launch_spin(apart, args.spin_ms)
                if rank == 1 and place.startswith("own"):
                    launch_spin(apart if place == "own, apart" else blocking, args.spin_ms)
                comm.Barrier()  # the exporter's kernel is launched
                if rank == 1:
                    time.sleep(0.01)  # the kernels are running
                    t0 = time.perf_counter()
                    out = probe.call(arg)
                    times.append((time.perf_counter() - t0) * 1e3)
                apart.synchronize()
                blocking.synchronize()
                if rank == 1 and probe.tidy:
                    probe.tidy(out, arg)
                comm.Barrier()
            if rank == 1:
                row[place] = (statistics.median(times), max(times))
        table.append((probe.name, row))
    if rank == 1:
        props = runtime.getDeviceProperties(cp.cuda.Device().id)
        print(f"# {props['name'].decode()}, driver {runtime.driverGetVersion()}, "
              f"kernels spin {args.spin_ms:.0f} ms, {args.repeats} repeats, "
              f"{runtime.getDeviceCount()} GPU(s) visible; median / max ms")
        print(f"{'call':<24}" + "".join(f"{pl:>22}" for pl in places))
        for name, row in table:
            cells = [f"{row[pl][0]:9.3f} /{row[pl][1]:9.3f}" if pl in row else "-" for pl in places]
            print(f"{name:<24}" + "".join(f"{c:>22}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
