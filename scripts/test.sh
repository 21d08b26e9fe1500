#!/usr/bin/env bash
# Every test: builds from scratch if needed, then runs the unit tests (ranks as threads) and the
# MPI tests (mpirun with the library preloaded) through ctest, against the system's libfabric
# (Debian's 1.17). EFACOLL_LIBFABRIC=2.6 runs them against upstream 2.6.0 with CUDA support
# instead, built once from ../shared/deps (scripts/libfabric.sh) into build-libfabric-2.6; that
# line is not yet in CI: 8 of its 665 tests fail (shm's one-sided path, docs/architecture.md).
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Tests labelled `long` (soaks, network-namespace sweeps) stay out unless a label is named:
# scripts/test.sh -L long runs them (or EFACOLL_LONG_TESTS=1 adds them to the rest).
labels=(-LE long)
if [[ "${EFACOLL_LONG_TESTS:-0}" == 1 || " $* " == *" -L"* ]]; then labels=(); fi
lines=(system)
[[ -n "${EFACOLL_LIBFABRIC:-}" ]] && lines=("$EFACOLL_LIBFABRIC")
for line in "${lines[@]}"; do
  echo "==== efacoll tests against libfabric: $line ===="
  export EFACOLL_LIBFABRIC="$line"
  scripts/setup.sh
  source scripts/build_dir.sh
  (cd "$build_dir" && ctest --output-on-failure --timeout 600 "${labels[@]}" "$@")
done
