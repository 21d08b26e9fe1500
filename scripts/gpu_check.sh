#!/usr/bin/env bash
# Everything efacoll needs checked on a GPU machine, in one run, from a build made elsewhere
# (nothing is compiled here):
#
#   scripts/gpu_check.sh [BUILD]        BUILD: the build directory (default build-gpu)
#
# Steps (select with STEPS="unit mpi cupy"; a word selects a step or its group, e.g. "mpi"
# selects mpi-tcp and mpi-shm; default: all):
#   info       nvidia-smi -L, nvidia-smi topo -m
#   ldd        libefacoll.so and the test binaries resolve every library
#   unit       efacoll_gpu_unit_tests (kernels against the host reference)
#   mpi-tcp    efacoll_mpi_gpu_tests --large, NP ranks, EFACOLL_PROVIDER=tcp
#   mpi-shm    the same on shm
#   mpi-*      GPU data inside the node goes peer to peer through CUDA IPC (the default)
#   chunk-tcp  efacoll_mpi_gpu_tests with EFACOLL_CHUNK_SIZE=65536, EFACOLL_GPU_HOST_PATH_MAX=0
#              and EFACOLL_IPC_CHUNK_SIZE=0 (staged fabric pipelines, small messages included)
#   chunk-shm  the same on shm
#   rdma-shm   one-sided protocol (clear-to-send + fi_writedata into the stage slots), --large
#   algos-tcp  the tree allreduce and the recursive allgather / reduce-scatter, forced, on the
#              staged fabric at every size
#   ll-wrap    the low-latency protocol crossing the wrap of its 32-bit packed flags
#   ipc-rounds CUDA IPC in 64 KiB rounds, small messages included, --large
#   np4-tcp    4 ranks sharing the GPUs (--oversubscribe), tcp
#   hier-tcp   the same, declared as 2 nodes of 2: hierarchical allreduce, inside each node over
#              CUDA IPC, across nodes over tcp
#   hier-staged-tcp  the same with EFACOLL_HIER_IPC=0: every phase over the staged fabric
#   channels-tcp  three channels on the staged fabric, small chunks
#   ring-nodes-tcp  4 ranks as 2 nodes of 2, the ring forced on 2 channels (rotated per node)
#   ipc-forced-shm  IPC direct forced at every size (no low-latency protocol, no host path)
#   agree-shm  EFACOLL_ROUTE_AGREE=1: the ranks agree at every call how their buffers lie, so
#              calls whose buffers lie on GPUs on some ranks and on the host on others must all
#              run on efacoll (the buffer-kinds section), every other section as well
#   agree-hier-tcp  the same on 4 ranks as 2 nodes of 2, tcp
#   trials-tcp  online trials (EFACOLL_TUNE_TRIALS=2) on the staged fabric: near call shapes
#              run each candidate in turn, every result checked
#   trials-hier-tcp  the same on 4 ranks as 2 nodes of 2 (the hierarchical allreduce among
#              the candidates)
#   soak-shm   efacoll_soak_test --memory gpu, NP ranks, shm: random collectives, sizes, types,
#              ops, in place or not, on device and managed memory (a host buffer now and then),
#              communicators created and freed during the run, each against PMPI on the host;
#              GPU memory in use and resident memory bounded, a 4-entry MR cache
#   soak-hier-tcp  the same on 4 ranks as 2 nodes of 2, tcp
#   threads-tcp  efacoll_threads_test --memory gpu: MPI_THREAD_MULTIPLE, 4 threads per rank on
#              their own communicators (and copies made and freed), random calls on GPU memory,
#              each thread at its own pace (the ranks order the threads' calls differently);
#              EFACOLL_IPC_LL_MAX=0: the test frees every call's buffers (cuMemFree waits for
#              every kernel, a low-latency one waiting for peers too)
#   threads-shm  the same on shm
#   threads-staged-tcp  the same with CUDA IPC off: every call over the staged fabric path
#   threads-hier-tcp  the same on 4 ranks as 2 nodes of 2 (hierarchical calls)
#   threads-turns-shm  the threads take turns in one order on every rank, the low-latency
#              protocol on (where ranks have GPUs of their own: NP ranks sharing one GPU run
#              without it)
#   fork-tcp   efacoll_fork_test --memory gpu: children forked after MPI_Init (exiting, exec,
#              computing, writing registered memory) between random calls on GPU memory
#   send-shm   the two-sided protocol on shm (EFACOLL_PROTOCOL=send), GPU data staged, CUDA IPC
#              off, every section: mismatched calls meet bounce receives
#   hmem-doctor-shm  efacoll-doctor with EFACOLL_PROVIDER=shm says a GPU buffer registered
#              through shm's FI_HMEM endpoint
#   hmem-*     FI_HMEM: the provider takes device pointers itself (EFACOLL_HMEM=on, CUDA IPC
#              off; without the mismatched-calls section, which stops shm's two-sided
#              FI_HMEM endpoint): hmem-shm (--large), hmem-chunk-shm,
#              hmem-algos-shm (tree, recursive), hmem-channels-shm, hmem-np4-shm, hmem-hier-shm
#              (2 nodes of 2), hmem-managed-shm and hmem-vmm-shm (--device-memory: managed memory,
#              staged; cuMemCreate memory), hmem-soak-shm, hmem-threads-shm. Each also fails unless
#              the INFO line says "FI_HMEM yes": it needs a libfabric built with CUDA (shm is the
#              only test provider with FI_HMEM; tcp and udp have none). LIBFABRIC_LIB: where that
#              libfabric lies here, when not where the build's RUNPATH says.
#   cupy       tests/gpu/cupy_allreduce.py (mpi4py + CuPy), NP ranks
#   fortran    efacoll_mpi_fortran_test, NP ranks, tcp, EFACOLL_HOST_BUFFERS=1: Fortran callers
#              (use mpi, use mpi_f08), GPU buffers among them
# Environment: NP (ranks, default 2), STEPS, STEP_TIMEOUT (seconds per step, default 300),
# TOTAL_TIMEOUT (seconds for the whole run, default 560: steps that would start later are not
# run), MPI_TEST_ARGS (extra arguments for efacoll_mpi_gpu_tests, e.g. --verbose), SOAK_CALLS
# (the soak steps' collectives, default 3000),
# EFACOLL_TIMEOUT (efacoll's own deadline inside the tests, default 120), OUT (when set, the
# log goes to $OUT/gpu_check.log and each step's output to $OUT/gpu_check/<step>.log).
# A step that prints "SKIP: no GPU" FAILS: this script only runs where GPUs are.
# Exit status: 0 when every selected step passed, 1 otherwise.
set -u -o pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_ARG="${1:-build-gpu}"
if [[ -d "$BUILD_ARG" ]]; then
  BUILD="$(cd "$BUILD_ARG" && pwd)"
elif [[ -d "$REPO/$BUILD_ARG" ]]; then
  BUILD="$(cd "$REPO/$BUILD_ARG" && pwd)"
else
  BUILD="$BUILD_ARG"  # reported as missing by the steps that need it
fi
NP="${NP:-2}"
STEPS="${STEPS:-all}"
STEP_TIMEOUT="${STEP_TIMEOUT:-300}"
TOTAL_TIMEOUT="${TOTAL_TIMEOUT:-560}"
MPI_TEST_ARGS="${MPI_TEST_ARGS:-}"
EFACOLL_TIMEOUT="${EFACOLL_TIMEOUT:-120}"
export NCCL_NVLS_ENABLE=0

if [[ -n "${OUT:-}" ]]; then
  mkdir -p "$OUT/gpu_check"
  LOG_DIR="$OUT/gpu_check"
  exec > >(tee -a "$OUT/gpu_check.log") 2>&1
  TEE_PID=$!
else
  LOG_DIR="$(mktemp -d /tmp/gpu_check.XXXXXX)"
fi

LIB="$BUILD/lib/libefacoll.so"
UNIT="$BUILD/bin/efacoll_gpu_unit_tests"
MPITEST="$BUILD/bin/efacoll_mpi_gpu_tests"
FORTRANTEST="$BUILD/bin/efacoll_mpi_fortran_test"
SOAKTEST="$BUILD/bin/efacoll_soak_test"
THREADSTEST="$BUILD/bin/efacoll_threads_test"
FORKTEST="$BUILD/bin/efacoll_fork_test"
DOCTOR="$BUILD/bin/efacoll-doctor"
CUPY_SCRIPT="$REPO/tests/gpu/cupy_allreduce.py"
START=$SECONDS
declare -a RESULT_STEP=() RESULT_STATUS=() RESULT_TIME=() RESULT_NOTE=() MPIRUN_CMD=()

echo "gpu_check: repo $REPO, build $BUILD, NP=$NP, STEPS=\"$STEPS\", step timeout ${STEP_TIMEOUT}s," \
  "total ${TOTAL_TIMEOUT}s, logs in $LOG_DIR"
echo "gpu_check: $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname)"

selected() {  # selected STEP: STEPS names it, its group (the part before '-') or "all"
  local step="$1" word
  for word in $STEPS; do
    [[ "$word" == all || "$word" == "$step" || "$word" == "${step%%-*}" ]] && return 0
  done
  return 1
}

record() {  # record STEP STATUS SECONDS NOTE
  RESULT_STEP+=("$1")
  RESULT_STATUS+=("$2")
  RESULT_TIME+=("$3")
  RESULT_NOTE+=("$4")
  echo "---- $1: $2${4:+ ($4)}"
}

need_files() {  # need_files FILE...: "" or what is missing
  local f missing=""
  for f in "$@"; do
    [[ -e "$f" ]] || missing+="${missing:+, }$f"
  done
  [[ -z "$missing" ]] || echo "missing $missing (build efacoll, efacoll_gpu_unit_tests and efacoll_mpi_gpu_tests with CUDA on the build machine)"
}

# Checks common to every step's output; prints the reason for failing, or nothing.
output_problem() {  # output_problem LOGFILE KIND   KIND: plain | gtest | mpi | result, or
  local log="$1" kind="$2" line failed  # mpi-hmem | result-hmem: and the INFO line says FI_HMEM yes
  if grep -q "SKIP: no GPU" "$log"; then
    echo "printed \"$(grep -m1 "SKIP: no GPU" "$log")\" on a GPU machine"
    return
  fi
  if [[ "$kind" == *-hmem ]]; then
    kind="${kind%-hmem}"
    if ! grep -q "FI_HMEM yes" "$log"; then
      echo "the INFO line does not say FI_HMEM yes: $(grep -m1 -o 'FI_HMEM [^,]*' "$log")"
      return
    fi
  fi
  case "$kind" in
    result)
      grep -q '^RESULT .*: passed$' "$log" ||
        echo "no passing RESULT line; first: $(grep -m1 -E '^FAIL' "$log" | cut -c1-300)"
      ;;
    gtest)
      if grep -q '^\[  SKIPPED \]' "$log"; then
        echo "$(grep -m1 -E '^\[  SKIPPED \] [0-9]+ test' "$log" | grep -oE '[0-9]+ tests?')" \
          "skipped, e.g. $(grep -m1 -A1 'Skipped$' "$log" | tail -1)"
      elif ! grep -q '^\[  PASSED  \]' "$log"; then
        echo "no \"[  PASSED  ]\" line"
      fi
      ;;
    mpi)
      line="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1)"
      if [[ -z "$line" ]]; then
        echo "no \"N passed, M failed\" line (crashed or hung?)"
        return
      fi
      failed="$(echo "$line" | awk '{print $3}')"
      if [[ "$failed" != 0 ]]; then
        echo "$line; first: $(grep -m1 '^FAIL' "$log" | cut -c1-300)"
        return
      fi
      if grep -q "GPU path none" "$log"; then
        echo "efacoll has no GPU path: $(grep -m1 -o 'GPU path none[^,]*' "$log")"
      fi
      ;;
  esac
}

# run_step NAME KIND COMMAND...: runs under timeout, logs, judges, records.
run_step() {
  local name="$1" kind="$2" log="$LOG_DIR/$1.log" left limit rc t0 problem status
  shift 2
  echo
  echo "==================== $name ===================="
  left=$((TOTAL_TIMEOUT - (SECONDS - START)))
  if ((left < 20)); then
    record "$name" "NOT RUN" 0 "out of time: TOTAL_TIMEOUT=${TOTAL_TIMEOUT}s spent"
    return
  fi
  limit=$((STEP_TIMEOUT < left - 10 ? STEP_TIMEOUT : left - 10))
  echo "\$ $*"
  t0=$SECONDS
  timeout --kill-after=15 "$limit" "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  problem="$(output_problem "$log" "$kind")"
  if ((rc == 124 || rc == 137)); then
    problem="timed out after ${limit}s${problem:+; $problem}"
  elif ((rc != 0)); then
    problem="exit status $rc${problem:+; $problem}"
  fi
  status=PASS
  [[ -z "$problem" ]] || status=FAIL
  record "$name" "$status" $((SECONDS - t0)) "$problem"
}

# A build against a libfabric of its own (scripts/libfabric.sh, EFACOLL_LIBFABRIC=2.6) finds it
# by its RUNPATH; LIBFABRIC_LIB names where it lies on this machine when that differs.
LD_PATH_ARGS=()
[[ -n "${LIBFABRIC_LIB:-}" ]] && LD_PATH_ARGS=(-x "LD_LIBRARY_PATH=$LIBFABRIC_LIB:${LD_LIBRARY_PATH:-}")

# mpirun_cmd NP PROVIDER [ENV=VALUE...] -- PROGRAM ARGS...: sets MPIRUN_CMD.
mpirun_cmd() {
  local np="$1" provider="$2"
  shift 2
  # shellcheck disable=SC2054  # the commas belong to OMPI_MCA_btl's value
  MPIRUN_CMD=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np"
    -x "LD_PRELOAD=$LIB" -x "EFACOLL_PROVIDER=$provider" -x EFACOLL_DEBUG=INFO
    -x EFACOLL_DEBUG_SUBSYS=INIT -x EFACOLL_STATS=1 -x "EFACOLL_TIMEOUT=$EFACOLL_TIMEOUT"
    -x NCCL_NVLS_ENABLE=0 -x OMPI_MCA_pml=ob1 -x OMPI_MCA_btl=self,vader,tcp "${LD_PATH_ARGS[@]}")
  while (($# > 0)) && [[ "$1" != -- ]]; do
    MPIRUN_CMD+=(-x "$1")
    shift
  done
  shift
  MPIRUN_CMD+=("$@")
}

# --- steps ---
if selected info && ! command -v nvidia-smi >/dev/null; then
  echo; echo "==================== info ===================="
  record info FAIL 0 "nvidia-smi not on PATH (no NVIDIA driver?)"
elif selected info; then
  # shellcheck disable=SC2016  # expanded by the inner bash
  run_step info plain bash -c 'nvidia-smi -L && nvidia-smi topo -m &&
    test "$(nvidia-smi -L | grep -c "^GPU")" -ge 1'
fi

if selected ldd; then
  missing="$(need_files "$LIB" "$UNIT" "$MPITEST")"
  if [[ -n "$missing" ]]; then
    echo; echo "==================== ldd ===================="
    record ldd FAIL 0 "$missing"
  else
    # shellcheck disable=SC2016  # expanded by the inner bash
    run_step ldd plain bash -c 'rc=0
      for f in "$@"; do
        echo "# ldd $f"; ldd "$f" || rc=1
        if ldd "$f" | grep -q "not found"; then echo "MISSING for $f:"; ldd "$f" | grep "not found"; rc=1; fi
      done
      exit $rc' ldd "$LIB" "$UNIT" "$MPITEST"
  fi
fi

if selected unit; then
  missing="$(need_files "$UNIT")"
  if [[ -n "$missing" ]]; then
    echo; echo "==================== unit ===================="
    record unit FAIL 0 "$missing"
  else
    run_step unit gtest "$UNIT"
  fi
fi

mpi_step() {  # mpi_step NAME NP PROVIDER [ENV=VALUE...] -- ARGS...
  local name="$1" np="$2" provider="$3" missing kind=mpi
  shift 3
  [[ "$name" == hmem-* ]] && kind=mpi-hmem
  selected "$name" || return 0
  missing="$(need_files "$LIB" "$MPITEST")"
  if [[ -n "$missing" ]]; then
    echo; echo "==================== $name ===================="
    record "$name" FAIL 0 "$missing"
    return 0
  fi
  local -a envs=()
  while (($# > 0)) && [[ "$1" != -- ]]; do
    envs+=("$1")
    shift
  done
  shift
  local -a extra=()
  read -r -a extra <<<"$MPI_TEST_ARGS"
  mpirun_cmd "$np" "$provider" "${envs[@]}" -- "$MPITEST" "$@" "${extra[@]}"
  run_step "$name" "$kind" "${MPIRUN_CMD[@]}"
}

mpi_step mpi-tcp "$NP" tcp -- --large
mpi_step mpi-shm "$NP" shm -- --large
mpi_step chunk-tcp "$NP" tcp EFACOLL_CHUNK_SIZE=65536 EFACOLL_GPU_HOST_PATH_MAX=0 EFACOLL_IPC_CHUNK_SIZE=0 --
mpi_step chunk-shm "$NP" shm EFACOLL_CHUNK_SIZE=65536 EFACOLL_GPU_HOST_PATH_MAX=0 EFACOLL_IPC_CHUNK_SIZE=0 --
# EFACOLL_HMEM=off: shm's FI_HMEM endpoint (a libfabric with CUDA) has no inject, so no one-sided.
mpi_step rdma-shm "$NP" shm EFACOLL_PROTOCOL=rdma EFACOLL_HMEM=off EFACOLL_RDMA_THRESHOLD=16384 EFACOLL_GPU_HOST_PATH_MAX=0 EFACOLL_IPC_CHUNK_SIZE=0 -- --large
# The two-sided protocol on shm, staged, every section (bad input, mismatched calls): every
# receive bounces; libfabric 2.6's shm stopped in fi_cq_read at the first call of another count.
mpi_step send-shm "$NP" shm EFACOLL_PROTOCOL=send EFACOLL_HMEM=off EFACOLL_GPU_HOST_PATH_MAX=0 EFACOLL_IPC_CHUNK_SIZE=0 --
mpi_step algos-tcp "$NP" tcp EFACOLL_ALGO=allreduce:tree,allgather:rd,reduce_scatter:rh EFACOLL_IPC_CHUNK_SIZE=0 EFACOLL_GPU_HOST_PATH_MAX=0 EFACOLL_CHUNK_SIZE=65536 --
mpi_step ll-wrap "$NP" shm EFACOLL_IPC_LL_SEQ_START=4294967290 --
mpi_step ipc-rounds "$NP" shm EFACOLL_IPC_CHUNK_SIZE=65536 EFACOLL_GPU_HOST_PATH_MAX=0 -- --large
mpi_step np4-tcp 4 tcp --
mpi_step hier-tcp 4 tcp EFACOLL_NODE_SIZE=2 --
mpi_step hier-staged-tcp 4 tcp EFACOLL_NODE_SIZE=2 EFACOLL_HIER_IPC=0 --
mpi_step channels-tcp "$NP" tcp EFACOLL_CHANNELS=3 EFACOLL_CHUNK_SIZE=65536 EFACOLL_GPU_HOST_PATH_MAX=0 EFACOLL_IPC_CHUNK_SIZE=0 --
mpi_step ring-nodes-tcp 4 tcp EFACOLL_NODE_SIZE=2 EFACOLL_ALGO=allreduce:ring EFACOLL_CHANNELS=2 --
mpi_step ipc-forced-shm "$NP" shm EFACOLL_ALGO=ipc --
mpi_step agree-shm "$NP" shm EFACOLL_ROUTE_AGREE=1 --
mpi_step agree-hier-tcp 4 tcp EFACOLL_NODE_SIZE=2 EFACOLL_ROUTE_AGREE=1 --
mpi_step trials-tcp "$NP" tcp EFACOLL_TUNE_TRIALS=2 EFACOLL_IPC_CHUNK_SIZE=0 EFACOLL_GPU_HOST_PATH_MAX=0 --
mpi_step trials-hier-tcp 4 tcp EFACOLL_NODE_SIZE=2 EFACOLL_TUNE_TRIALS=2 --
# FI_HMEM: device pointers handed to the provider itself (a libfabric built with CUDA, such as
# scripts/libfabric.sh's 2.6; of the test providers only shm has FI_HMEM), CUDA IPC off so that
# every call crosses the fabric, MPI_Init failing unless the provider takes GPU memory.
# shm's FI_HMEM endpoint has no inject, so no one-sided protocol: its messages are two-sided,
# and a call of another count (the mismatched-calls section) stops shm for good.
HMEM=(EFACOLL_HMEM=on EFACOLL_IPC_CHUNK_SIZE=0 EFACOLL_GPU_HOST_PATH_MAX=0)
mpi_step hmem-shm "$NP" shm "${HMEM[@]}" -- --large --no-mismatch
# efacoll-doctor registers a GPU buffer through shm's FI_HMEM endpoint, as MPI_Init does.
if selected hmem-doctor-shm; then
  # shellcheck disable=SC2016  # expanded by the inner bash
  run_step hmem-doctor-shm plain bash -c 'EFACOLL_PROVIDER=shm "$1" 2>&1 | tee /dev/stderr |
    grep -q "provider shm offers FI_HMEM and a GPU buffer registered through it (by "' \
    doctor "$DOCTOR"
fi
mpi_step hmem-chunk-shm "$NP" shm "${HMEM[@]}" EFACOLL_CHUNK_SIZE=65536 -- --no-mismatch
mpi_step hmem-algos-shm "$NP" shm "${HMEM[@]}" EFACOLL_ALGO=allreduce:tree,allgather:rd,reduce_scatter:rh EFACOLL_CHUNK_SIZE=65536 -- --no-mismatch
mpi_step hmem-channels-shm "$NP" shm "${HMEM[@]}" EFACOLL_CHANNELS=3 EFACOLL_CHUNK_SIZE=65536 -- --no-mismatch
mpi_step hmem-np4-shm 4 shm "${HMEM[@]}" -- --no-mismatch
mpi_step hmem-hier-shm 4 shm "${HMEM[@]}" EFACOLL_NODE_SIZE=2 -- --no-mismatch
mpi_step hmem-managed-shm "$NP" shm "${HMEM[@]}" -- --device-memory=managed --no-mismatch
mpi_step hmem-vmm-shm "$NP" shm "${HMEM[@]}" -- --device-memory=vmm --no-mismatch

result_step() {  # result_step NAME NP PROVIDER [ENV=VALUE...] -- PROGRAM ARGS...
  local name="$1" np="$2" provider="$3" missing arg prev="" program="" kind=result
  [[ "$name" == hmem-* ]] && kind=result-hmem
  shift 3
  selected "$name" || return 0
  for arg in "$@"; do  # the program: the word after --
    [[ "$prev" == -- ]] && program="$arg" && break
    prev="$arg"
  done
  missing="$(need_files "$LIB" "$program")"
  if [[ -n "$missing" ]]; then
    echo; echo "==================== $name ===================="
    record "$name" FAIL 0 "$missing"
    return 0
  fi
  mpirun_cmd "$np" "$provider" "$@"
  run_step "$name" "$kind" "${MPIRUN_CMD[@]}"
}

SOAK=("$SOAKTEST" --memory gpu --calls "${SOAK_CALLS:-3000}" --report-every 500)
result_step soak-shm "$NP" shm EFACOLL_MR_CACHE_ENTRIES=4 -- "${SOAK[@]}"
result_step soak-hier-tcp 4 tcp EFACOLL_MR_CACHE_ENTRIES=4 EFACOLL_NODE_SIZE=2 -- "${SOAK[@]}"
THREADS=("$THREADSTEST" --memory gpu --threads 4 --calls 200)
result_step threads-tcp "$NP" tcp EFACOLL_IPC_LL_MAX=0 -- "${THREADS[@]}"
result_step threads-shm "$NP" shm EFACOLL_IPC_LL_MAX=0 -- "${THREADS[@]}"
result_step threads-staged-tcp "$NP" tcp EFACOLL_IPC_CHUNK_SIZE=0 -- "${THREADS[@]}"
result_step threads-hier-tcp 4 tcp EFACOLL_NODE_SIZE=2 EFACOLL_IPC_LL_MAX=0 -- "${THREADS[@]}"
result_step threads-turns-shm "$NP" shm -- "${THREADS[@]}" --gpu-order turns
result_step fork-tcp "$NP" tcp -- "$FORKTEST" --memory gpu
result_step hmem-soak-shm "$NP" shm "${HMEM[@]}" EFACOLL_MR_CACHE_ENTRIES=4 -- "${SOAK[@]}"
result_step hmem-threads-shm "$NP" shm "${HMEM[@]}" EFACOLL_IPC_LL_MAX=0 -- "${THREADS[@]}"

if selected cupy; then
  missing="$(need_files "$LIB" "$CUPY_SCRIPT")"
  python="$(command -v python3 || true)"
  if [[ -z "$python" ]]; then missing+="${missing:+, }python3 not on PATH"; fi
  if [[ -n "$missing" ]]; then
    echo; echo "==================== cupy ===================="
    record cupy FAIL 0 "$missing"
  else
    mpirun_cmd "$NP" tcp PYTHONUNBUFFERED=1 -- "$python" "$CUPY_SCRIPT"
    run_step cupy mpi "${MPIRUN_CMD[@]}"
  fi
fi

if selected fortran; then
  missing="$(need_files "$LIB" "$FORTRANTEST")"
  if [[ -n "$missing" ]]; then
    echo; echo "==================== fortran ===================="
    record fortran FAIL 0 "$missing"
  else
    mpirun_cmd "$NP" tcp EFACOLL_HOST_BUFFERS=1 -- "$FORTRANTEST"
    run_step fortran mpi "${MPIRUN_CMD[@]}"
  fi
fi

# --- summary ---
echo
echo "==================== summary ===================="
printf '%-10s %-8s %6s  %s\n' step result time note
failed=0
for i in "${!RESULT_STEP[@]}"; do
  printf '%-10s %-8s %5ss  %s\n' "${RESULT_STEP[$i]}" "${RESULT_STATUS[$i]}" "${RESULT_TIME[$i]}" \
    "${RESULT_NOTE[$i]}"
  [[ "${RESULT_STATUS[$i]}" == PASS ]] || failed=1
done
if ((${#RESULT_STEP[@]} == 0)); then
  echo "no step matched STEPS=\"$STEPS\" (steps: info ldd unit mpi-tcp mpi-shm chunk-tcp chunk-shm rdma-shm algos-tcp ll-wrap ipc-rounds np4-tcp hier-tcp hier-staged-tcp channels-tcp ring-nodes-tcp ipc-forced-shm agree-shm agree-hier-tcp trials-tcp trials-hier-tcp soak-shm soak-hier-tcp threads-tcp threads-shm threads-staged-tcp threads-hier-tcp threads-turns-shm fork-tcp cupy fortran)"
  failed=1
fi
echo "logs: $LOG_DIR"
if ((failed)); then echo "gpu_check: FAILED"; else echo "gpu_check: all passed"; fi
echo "gpu_check: $((SECONDS - START)) s"
if [[ -n "${TEE_PID:-}" ]]; then  # let tee finish writing the log before we are gone
  exec >&- 2>&-
  wait "$TEE_PID"
fi
exit "$failed"
