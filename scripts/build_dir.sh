# Sourced by the scripts that build or run a build: the build directory, relative to the
# checkout. BUILD_DIR names it; otherwise `build`, or `build-libfabric-<version>` for a build
# against the libfabric that scripts/libfabric.sh makes (EFACOLL_LIBFABRIC=<version>).
if [[ -n "${BUILD_DIR:-}" ]]; then
  build_dir="$BUILD_DIR"
elif [[ -n "${EFACOLL_LIBFABRIC:-}" && "${EFACOLL_LIBFABRIC}" != system ]]; then
  build_dir="build-libfabric-$EFACOLL_LIBFABRIC"
else
  build_dir=build
fi
