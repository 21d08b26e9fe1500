#!/usr/bin/env bash
# Every test: builds from scratch if needed, then runs the unit tests (ranks as threads) and the
# MPI tests (mpirun with the library preloaded) through ctest, once against each libfabric line:
# the system's (Debian's 1.17) in build/, then upstream 2.6.0 with CUDA support (the line AWS
# ships), built once from ../shared/deps by scripts/libfabric.sh, in build-libfabric-2.6/.
# EFACOLL_LIBFABRIC=system or =2.6 runs one line only. Both lines run even if the first fails.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Tests labelled `long` (soaks, network-namespace sweeps) stay out unless a label is named:
# scripts/test.sh -L long runs them (or EFACOLL_LONG_TESTS=1 adds them to the rest).
labels=(-LE long)
if [[ "${EFACOLL_LONG_TESTS:-0}" == 1 || " $* " == *" -L"* ]]; then labels=(); fi
lines=(system 2.6)
[[ -n "${EFACOLL_LIBFABRIC:-}" ]] && lines=("$EFACOLL_LIBFABRIC")
failed=()
for line in "${lines[@]}"; do
  echo "==== efacoll tests against libfabric: $line ===="
  export EFACOLL_LIBFABRIC="$line"
  if ! scripts/setup.sh; then failed+=("$line (build)"); continue; fi
  source scripts/build_dir.sh
  (cd "$build_dir" && ctest --output-on-failure --timeout 600 "${labels[@]}" "$@") ||
    failed+=("$line")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "==== efacoll tests FAILED against libfabric: ${failed[*]} ===="
  exit 1
fi
echo "==== efacoll tests passed against libfabric: ${lines[*]} ===="
