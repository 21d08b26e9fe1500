#!/usr/bin/env python3
"""MPI_Reduce_scatter_block on GPU buffers, in place and out of place: every way forced and the
tuner's own choice, interleaved batch by batch in one process.

In place, IPC cannot read the peers' inputs where they lie (the output overwrites them), so it
runs in rounds through its workspaces instead of IPC direct; where ranks share a GPU, efacoll
times those rounds apart (docs/decisions/0025-measure-ipc-against-the-fabric-where-ranks-share-
a-gpu.md). Ways: ipc (IPC direct or its rounds), ring, rd (recursive halving) and auto; before auto is timed at a size, 200 calls
let the online trials settle. Each way's time is the slowest rank's median over 9 batches of 5
calls, the ways in an order shuffled per batch; "auto / best" is auto's over the fastest forced
way's, "auto ran" what auto's last call ran. Float sum; after the timing, one call of each way
is checked ("exact": all were).

  mpirun -np 2 -x LD_PRELOAD=<build>/lib/libefacoll.so -x EFACOLL_TUNE=calibrate \
      python3 bench/reduce_scatter_in_place.py

EFACOLL_TUNE=calibrate turns the online trials on (EFACOLL_TUNE_TRIALS=auto: 7 where the links
were calibrated, else none).
"""
import ctypes
import random
import time

from mpi4py import MPI

from gpu_ranks import comm, cp, rank, size

WAYS = ["ipc", "ring", "rd", "auto"]
SIZES = [1 << s for s in range(12, 25, 2)]  # 4 KiB to 16 MiB of input
BATCHES, CALLS, SETTLE = 9, 5, 200


def main():
    try:
        set_algo = ctypes.CDLL(None).efacoll_set_algo
    except AttributeError:
        if rank == 0:
            print("SKIP: libefacoll.so is not preloaded")
        return
    set_algo.argtypes = [ctypes.c_char_p]

    def force(way):
        if set_algo(way.encode()) != 0:
            raise SystemExit(f"efacoll_set_algo({way!r}) failed")
    last_algorithm = ctypes.CDLL(None).efacoll_last_algorithm
    last_algorithm.restype = ctypes.c_char_p
    if rank == 0:
        print("| input (B) | in place | " + " | ".join(f"{w} us" for w in WAYS) +
              " | auto / best | auto ran | exact |")
        print("|---" * (len(WAYS) + 5) + "|")
    for nbytes in SIZES:
        count = nbytes // 4 // size * size
        for inplace in (True, False):
            row, exact = time_ways(force, count, inplace)
            ran = (last_algorithm() or b"?").decode()
            times = [comm.allreduce(t, op=MPI.MAX) for t in row]
            exact = comm.allreduce(exact, op=MPI.LAND)
            if rank == 0:
                best = min(times[:-1])
                print(f"| {count * 4} | {'yes' if inplace else 'no'} | " +
                      " | ".join(f"{t:.1f}" for t in times) +
                      f" | {times[-1] / best:.2f} | {ran} | {'yes' if exact else 'NO'} |",
                      flush=True)


def time_ways(force, count, inplace):
    """Each way's median microseconds a call on this rank, and whether one call of each way was
    exact, auto's last."""
    block = count // size
    # Small integers: every sum is exact in float, whatever the order.
    base = cp.arange(count, dtype=cp.float32) % 7 + rank
    buf = base.copy()
    out = cp.zeros(block, dtype=cp.float32)

    def call():
        if inplace:
            comm.Reduce_scatter_block(MPI.IN_PLACE, buf, op=MPI.SUM)
        else:
            comm.Reduce_scatter_block(buf, out, op=MPI.SUM)

    force("auto")
    for _ in range(SETTLE):
        buf[:] = base
        call()
    samples = {w: [] for w in WAYS}
    for batch in range(-1, BATCHES):  # -1: a warm-up
        # A shuffled order, the same on every rank: no way always follows the same other (the
        # first call after another way's may pay for the switch).
        order = list(WAYS)
        random.Random(batch).shuffle(order)
        for way in order:
            force(way)
            # In place a batch sums sums: the values grow size**CALLS-fold, still exact in float.
            buf[:] = base
            cp.cuda.runtime.deviceSynchronize()
            comm.Barrier()
            start = time.perf_counter()
            for _ in range(CALLS):
                call()
            cp.cuda.runtime.deviceSynchronize()
            if batch >= 0:
                samples[way].append((time.perf_counter() - start) / CALLS * 1e6)
    first = rank * block
    want = (cp.arange(first, first + block, dtype=cp.float32) % 7) * size + sum(range(size))
    exact = True
    for way in WAYS:  # auto last: its algorithm is the one reported
        force(way)
        buf[:] = base
        out[:] = -1
        call()
        exact = exact and bool(cp.array_equal(buf[:block] if inplace else out, want))
    medians = [sorted(samples[w])[BATCHES // 2] for w in WAYS]
    return medians, exact


if __name__ == "__main__":
    main()
