#!/usr/bin/env bash
# The main job: builds efacoll, then runs an unmodified MPI program on 4 ranks with the library
# preloaded, logging which provider carries the traffic and what efacoll ran.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
source scripts/build_dir.sh
build=$(pwd)/$build_dir

if [ -z "${EFACOLL_PROVIDER:-}" ]; then
  if fi_info -p efa >/dev/null 2>&1; then
    export EFACOLL_PROVIDER=efa
  else
    # efacoll refuses to fall back silently; the demo chooses another provider on purpose.
    echo "demo: no EFA on this machine: choosing EFACOLL_PROVIDER=shm deliberately"
    export EFACOLL_PROVIDER=shm
  fi
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Host buffers: the demo has no GPU buffers, so ask efacoll to run host ones too.
mpirun --oversubscribe -np "${NP:-4}" \
  -x LD_PRELOAD="$build/lib/libefacoll.so" -x EFACOLL_PROVIDER -x EFACOLL_HOST_BUFFERS=1 \
  -x EFACOLL_DEBUG=INFO -x EFACOLL_DEBUG_SUBSYS=INIT -x EFACOLL_STATS=1 \
  "$build/bin/efacoll_demo"
