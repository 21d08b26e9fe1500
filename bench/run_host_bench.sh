#!/usr/bin/env bash
# Runs efacoll-bench (allreduce unless the options say -C ...) once per libfabric provider on
# this host, efacoll against the host MPI, host buffers.
# Usage: bench/run_host_bench.sh [BUILD_DIR [PROVIDERS]] [--] [BENCH_OPTIONS...]
#   BUILD_DIR defaults to ./build, PROVIDERS to "shm tcp"; NP (default 4) sets the rank count.
#   e.g. NP=2 bench/run_host_bench.sh build tcp -e 16M -d double
# Exits 1 if any run failed (wrong results included), after running every provider.
set -euo pipefail

build=./build
providers="shm tcp"
if [[ $# -gt 0 && $1 != -* ]]; then build=$1; shift; fi
if [[ $# -gt 0 && $1 != -* ]]; then providers=$1; shift; fi
if [[ $# -gt 0 && $1 == -- ]]; then shift; fi

build=$(cd "$build" && pwd)  # mpirun's ranks need an absolute LD_PRELOAD path
lib=$build/lib/libefacoll.so
bench=$build/bin/efacoll-bench
for f in "$lib" "$bench"; do
  [[ -e $f ]] || { echo "run_host_bench.sh: $f not found (build efacoll and efacoll_bench)" >&2; exit 2; }
done

status=0
for p in $providers; do
  echo "=== provider $p, ${NP:-4} ranks ==="
  mpirun --allow-run-as-root --oversubscribe -np "${NP:-4}" \
    -x LD_PRELOAD="$lib" -x EFACOLL_PROVIDER="$p" -x EFACOLL_HOST_BUFFERS=1 \
    "$bench" "$@" || status=1
  echo
done
exit "$status"
