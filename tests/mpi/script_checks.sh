# Shared by the script tests (source it): a clean environment, an output file, pass/fail counts.
#   check <ok 0|1> <description>   counts one result, printing the description when it failed
#   finish                          prints "N passed, M failed"; false when anything failed

# Local ranks inherit mpirun's environment: nothing of the caller's may leak in.
for v in $(compgen -e | grep -E '^(EFACOLL_|FI_PROVIDER$)'); do unset "$v"; done

passed=0
failed=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

check() {
  if [[ $1 == 1 ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $2"
  fi
}

finish() {
  echo "$passed passed, $failed failed"
  [[ $failed == 0 ]]
}
