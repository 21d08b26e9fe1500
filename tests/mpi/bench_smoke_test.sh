#!/usr/bin/env bash
# efacoll-bench under mpirun, small sizes: 4 ranks with libefacoll.so preloaded on the tcp
# provider, host buffers through efacoll. Reports are checked by bench_smoke_check.py (sizes,
# #wrong 0, algbw and busbw arithmetic, efacoll loaded and running every call), plus:
#   - in place with another type, op and collective;
#   - without the preload: efacoll said to be absent, its column dropped;
#   - the plot, where gnuplot is installed;
#   - a bad option: usage and exit 2; --mem device without a GPU: a clear message and exit 2.
# Usage: bench_smoke_test.sh LIBEFACOLL BENCH [MPIEXEC]
# Prints "N passed, M failed"; exits 1 if anything failed.
set -u

lib=${1:?usage: $0 LIBEFACOLL BENCH [MPIEXEC]}
bench=${2:?usage: $0 LIBEFACOLL BENCH [MPIEXEC]}
mpiexec=${3:-mpirun}
checker=$(dirname "$0")/bench_smoke_check.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Local ranks inherit mpirun's environment: nothing of the caller's may leak in.
for v in $(compgen -e | grep -E '^(EFACOLL_|FI_PROVIDER$)'); do unset "$v"; done

passed=0
failed=0
expect() { # expect <description> <command...>: a pass when the command succeeds
  local what=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $what"
  fi
}

run_bench() { # run_bench <label> <preload 0|1> BENCH_ARGS...: output in $work/<label>.out, exit code in $rc
  local label=$1 preload=$2
  shift 2
  local env=(-x EFACOLL_PROVIDER=tcp -x EFACOLL_HOST_BUFFERS=1 -x EFACOLL_TIMEOUT=60)
  [[ $preload == 1 ]] && env+=(-x LD_PRELOAD="$lib")
  timeout 120 "$mpiexec" --allow-run-as-root --oversubscribe -np 4 "${env[@]}" \
    -x OMPI_MCA_pml=ob1 -x OMPI_MCA_btl=self,vader,tcp \
    "$bench" -n 10 -w 2 -r 3 "$@" >"$work/$label.out" 2>"$work/$label.err"
  rc=$?
  echo "--- $label: exit $rc"
  sed 's/^/    /' "$work/$label.out" | head -30
}

sizes=(-b 8 -e 256K -f 2)
size_args=(--ranks 4 --min 8 --max 262144 --factor 2)

plot=()
have_gnuplot=0
if command -v gnuplot >/dev/null; then
  have_gnuplot=1
  plot=(--plot "$work/allreduce.png")
fi
run_bench allreduce 1 "${sizes[@]}" -c 1 --json "$work/allreduce.json" --csv "$work/allreduce.csv" \
  "${plot[@]}"
expect "allreduce run exits 0 (got $rc)" test "$rc" -eq 0
expect "allreduce report" python3 "$checker" "$work/allreduce.json" --collective allreduce \
  --type float "${size_args[@]}" --provider tcp --csv "$work/allreduce.csv"
expect "the table's header names the provider" grep -q '^# efacoll: provider tcp' "$work/allreduce.out"
if [[ $have_gnuplot == 1 ]]; then
  expect "--plot wrote a PNG" grep -q PNG <(head -c 8 "$work/allreduce.png")
else
  echo "(gnuplot not installed: the plot is not checked)"
fi

run_bench inplace 1 "${sizes[@]}" -c 1 --inplace -d int32 -o max -C reduce_scatter_block \
  --json "$work/inplace.json"
expect "in-place reduce_scatter_block run exits 0 (got $rc)" test "$rc" -eq 0
expect "in-place reduce_scatter_block report" python3 "$checker" "$work/inplace.json" \
  --collective reduce_scatter_block --type int32 "${size_args[@]}" --provider tcp --in-place

run_bench allgather 1 "${sizes[@]}" -c 1 --inplace -d int8 -C allgather --json "$work/allgather.json"
expect "in-place int8 allgather run exits 0 (got $rc)" test "$rc" -eq 0
expect "in-place int8 allgather report" python3 "$checker" "$work/allgather.json" \
  --collective allgather --type int8 "${size_args[@]}" --provider tcp --in-place

run_bench no_preload 0 -b 8 -e 1K -f 4 -c 1 --json "$work/no_preload.json"
expect "run without efacoll exits 0 (got $rc)" test "$rc" -eq 0
expect "report without efacoll" python3 "$checker" "$work/no_preload.json" \
  --collective allreduce --type float --ranks 4 --min 8 --max 1024 --factor 4 --no-efacoll
expect "the header says efacoll is not loaded" grep -q '^# efacoll: not loaded' "$work/no_preload.out"

run_bench bad_option 1 --dtype half
expect "a bad option exits 2 (got $rc)" test "$rc" -eq 2
expect "a bad option says which" grep -q 'bad value for --dtype: half' "$work/bad_option.err"
expect "a bad option shows usage" grep -q '^usage: efacoll-bench' "$work/bad_option.err"

run_bench device 1 --mem device -e 1K
if [[ $rc == 0 ]]; then
  echo "(a GPU is here: --mem device ran)"
else
  expect "--mem device without a GPU exits 2 (got $rc)" test "$rc" -eq 2
  expect "--mem device without a GPU says so" \
    grep -q -- '--mem device: rank 0 has no usable GPU' "$work/device.err"
fi

echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
