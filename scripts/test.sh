#!/usr/bin/env bash
# Every test: builds from scratch if needed, then runs the unit tests (ranks as threads) and
# the MPI tests (mpirun with the library preloaded) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "${BUILD_DIR:-build}"
# Tests labelled `long` (soaks, network-namespace sweeps) stay out unless a label is named:
# scripts/test.sh -L long runs them (or EFACOLL_LONG_TESTS=1 adds them to the rest).
labels=(-LE long)
if [[ "${EFACOLL_LONG_TESTS:-0}" == 1 || " $* " == *" -L"* ]]; then labels=(); fi
ctest --output-on-failure --timeout 600 "${labels[@]}" "$@"
