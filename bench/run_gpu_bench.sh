#!/usr/bin/env bash
# Runs gpu_bench on a machine with 2 GPUs (no compiling): efacoll on GPU buffers against efacoll on
# host buffers and NCCL, for each libfabric provider. Usage: bench/run_gpu_bench.sh [BUILD_DIR [OUT]]
#   BUILD_DIR defaults to ./build; OUT (or $OUT) gets gpu_bench.log. PROVIDERS (default "shm tcp")
#   and NP (default 2) override. About 2 minutes on 2 H200s (each run has a time limit).
# Exits 1 if any run failed or timed out (wrong results included), after running them all.
set -uo pipefail

build=${1:-./build}
out=${2:-${OUT:-}}
build=$(cd "$build" && pwd) || exit 2 # mpirun's ranks need an absolute LD_PRELOAD path
lib=$build/lib/libefacoll.so
bench=$build/bin/gpu_bench
for f in "$lib" "$bench"; do
  [[ -e $f ]] || { echo "run_gpu_bench.sh: $f not found (build efacoll and gpu_bench)" >&2; exit 2; }
done
log=/dev/null
if [[ -n $out ]]; then
  mkdir -p "$out" && log=$out/gpu_bench.log && : >"$log"
fi

status=0
# run SECONDS PROVIDER ARGS...: one mpirun under a time limit, output shown and logged.
run() {
  local limit=$1 provider=$2
  shift 2
  echo "=== provider $provider: gpu_bench $* ===" | tee -a "$log"
  # ob1 + vader/tcp: Open MPI's own traffic (the PMPI timing reductions, the fallback) stays on
  # the host; NVLS off so that NCCL needs no multicast objects on a 2-GPU box.
  timeout --kill-after=10 "$limit" mpirun --allow-run-as-root -np "${NP:-2}" \
    -x LD_PRELOAD="$lib" -x EFACOLL_PROVIDER="$provider" -x EFACOLL_HOST_BUFFERS=1 \
    -x NCCL_NVLS_ENABLE=0 -x OMPI_MCA_pml=ob1 -x OMPI_MCA_btl=self,vader,tcp \
    "$bench" "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  if [[ $rc -ne 0 ]]; then
    echo "=== FAILED (exit $rc$([[ $rc -eq 124 ]] && echo ', timed out')) ===" | tee -a "$log"
    status=1
  fi
  echo | tee -a "$log"
}

# -r 3 -w 1: at 1 GB one call takes up to ~0.8 s through tcp; adaptive iterations go down to 3
# per repeat there, so the largest size costs ~11 calls per implementation. Measured on 2 H200s:
# allreduce ~30-40 s, allgather and reduce_scatter ~10 s, latency ~5 s per provider.
for p in ${PROVIDERS:-shm tcp}; do
  run 120 "$p" -c allreduce -b 1M -e 1G -r 3 -w 1
  run 45 "$p" -c allgather -b 1M -e 256M -r 3 -w 1
  run 45 "$p" -c reduce_scatter -b 1M -e 256M -r 3 -w 1
  run 30 "$p" -l
done
exit "$status"
