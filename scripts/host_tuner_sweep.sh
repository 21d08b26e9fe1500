#!/usr/bin/env bash
# The tuner against every forced algorithm on host buffers (bench/tuner_bench.c), all three
# collectives, 8 B to 256 MiB, each provider in turn, RUNS times (each MPI run calibrates
# afresh); one table per run, provider and collective, then a summary over the runs per pair
# (bench/tuner_summary.py):
#   scripts/host_tuner_sweep.sh [BUILD]     (default build; OUT: where the tables go)
# Environment: RUNS (3), NP (4), PROVIDERS ("tcp shm"), BIND (none; "core" where there is a core
# per rank), REPEATS (7), MAX_BYTES (268435456), STEP_TIMEOUT (seconds for one sweep, 300).
set -u -o pipefail
BUILD="$(cd "${1:-build}" && pwd)"
OUT="${OUT:-.}"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0
for run in $(seq 1 "${RUNS:-3}"); do
  for p in ${PROVIDERS:-tcp shm}; do
    for c in allreduce allgather reduce_scatter; do
      b=8
      [[ $c != allreduce ]] && b=16
      start=$(date +%s)
      # shellcheck disable=SC2054  # the commas belong to OMPI_MCA_btl's value
      timeout "${STEP_TIMEOUT:-300}" mpirun --oversubscribe --bind-to "${BIND:-none}" \
        -np "${NP:-4}" -x LD_PRELOAD="$BUILD/lib/libefacoll.so" -x EFACOLL_PROVIDER="$p" \
        -x EFACOLL_TUNE=calibrate -x EFACOLL_HOST_BUFFERS=1 \
        -x OMPI_MCA_pml=ob1 -x OMPI_MCA_btl=self,vader,tcp \
        "$BUILD/bin/tuner_bench" -c "$c" -b "$b" -e "${MAX_BYTES:-268435456}" -f 4 \
        -r "${REPEATS:-7}" -t 2 \
        >"$OUT/run${run}_${p}_$c.md" 2>&1
      rc=$?
      [[ $rc -eq 0 ]] || status=1
      echo "run $run $p $c: exit $rc, $(($(date +%s) - start)) s"
    done
  done
done
for p in ${PROVIDERS:-tcp shm}; do
  for c in allreduce allgather reduce_scatter; do
    echo "#### $c, $p (${RUNS:-3} runs)"
    python3 "$HERE/bench/tuner_summary.py" "$OUT"/run*_"${p}_$c.md"
  done
done
exit "$status"
