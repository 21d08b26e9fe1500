#!/usr/bin/env bash
# The tuner against every forced algorithm and in-node protocol on GPU buffers, a process per
# GPU (or, with more ranks than GPUs, sharing them), all three collectives, 8 B to 256 MiB
# (bench/tuner_bench.c -m device):
#   scripts/gpu_tuner_bench.sh [BUILD]     (default build-gpu; OUT: where the tables go)
# Environment: NP (2; more ranks than GPUs share them), PROVIDER (shm), REPEATS (5), TUNE
# (EFACOLL_TUNE: auto), MAX_BYTES (268435456), STEP_TIMEOUT (seconds per collective, 200).
set -u -o pipefail
BUILD="${1:-build-gpu}"
NP="${NP:-2}"
OUT="${OUT:-.}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for c in allreduce allgather reduce_scatter; do
  b=8
  [[ $c != allreduce ]] && b=16
  timeout "${STEP_TIMEOUT:-200}" mpirun -np "$NP" --bind-to none \
    -x LD_PRELOAD="$BUILD/lib/libefacoll.so" -x EFACOLL_PROVIDER="${PROVIDER:-shm}" \
    -x EFACOLL_TUNE="${TUNE:-auto}" \
    -x OMPI_MCA_pml=ob1 -x OMPI_MCA_btl=self,vader,tcp \
    "$BUILD/bin/tuner_bench" -m device -c "$c" -b "$b" -e "${MAX_BYTES:-268435456}" -f 4 -r "${REPEATS:-5}" \
    2>&1 | tee "$OUT/tuner_gpu_$c.md"
done
