#!/usr/bin/env bash
# Bad input under MPI_ERRORS_ARE_FATAL: each case (one per error class, every collective; the
# rest are checked under MPI_ERRORS_RETURN by efacoll_mpi_tests) must end the job with a nonzero
# status and efacoll's message on the way out; neither return from the call nor crash.
# Usage: fatal_errors_test.sh LIBEFACOLL MPI_TESTS [MPIEXEC]
set -u
lib=$1 tests=$2 mpiexec=${3:-mpirun}
for v in $(compgen -e | grep -E '^EFACOLL_'); do unset "$v"; done
# case (collective:bad input) and the start of the message it must print
cases=(
  "allreduce:negative-count|efacoll: MPI_Allreduce: MPI_ERR_COUNT:"
  "reduce_scatter:null-recvbuf|efacoll: MPI_Reduce_scatter: MPI_ERR_BUFFER:"
  "allgather:uncommitted-recvtype|efacoll: MPI_Allgather: MPI_ERR_TYPE:"
  "reduce_scatter_block:op-null|efacoll: MPI_Reduce_scatter_block: MPI_ERR_OP:"
  "allgather:comm-null|efacoll: MPI_Allgather: MPI_ERR_COMM:"
  "allreduce:stale-comm|efacoll: MPI_Allreduce: MPI_ERR_COMM: the communicator was freed"
  "reduce_scatter_block:overlap|efacoll: MPI_Reduce_scatter_block: MPI_ERR_BUFFER:"
)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
failed=0
for entry in "${cases[@]}"; do
  spec=${entry%%|*} want=${entry#*|}
  timeout 30 "$mpiexec" --allow-run-as-root --oversubscribe -np 2 \
    -x LD_PRELOAD="$lib" -x EFACOLL_PROVIDER=shm -x EFACOLL_HOST_BUFFERS=1 -x EFACOLL_TIMEOUT=20 \
    -x OMPI_MCA_pml=ob1 -x OMPI_MCA_btl=self,vader "$tests" "--fatal=$spec" >"$out" 2>&1
  rc=$?
  why=""
  if ((rc == 0)); then
    why="the job exited with status 0"
  elif ((rc == 124)); then
    why="the job did not end within 30 s"
  elif grep -qE 'Segmentation fault|signal [0-9]+|instead of aborting|no such case' "$out"; then
    why="it crashed, returned or did not run"
  elif ! grep -qF "$want" "$out"; then
    why="no \"$want\" in its output"
  # Open MPI 4.1's mpirun at times loses the handler's own text on the way
  # ("ORTE_ERROR_LOG ... show_help.c"): the job still aborted with efacoll's message.
  elif ! grep -qF "MPI_ERRORS_ARE_FATAL" "$out" && ! grep -qF "show_help.c" "$out"; then
    why="MPI's fatal handler did not report it"
  fi
  if [[ -n $why ]]; then
    echo "FAIL $spec: $why (status $rc); its output:"
    sed 's/^/    /' "$out" | tail -20
    failed=1
  else
    echo "ok   $spec: status $rc, \"$want ...\""
  fi
done
exit $failed
