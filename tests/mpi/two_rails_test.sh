#!/usr/bin/env bash
# The MPI tests with every rank striping over two NICs: tcp's first two domains (a network
# interface and lo) stand in for a GPU's EFAs. Also checks that the INFO line names both.
# Usage: two_rails_test.sh LIBEFACOLL MPI_TESTS [MPIEXEC]. Exit 77 (skip) with fewer than two.
set -u
lib=$1 tests=$2 mpiexec=${3:-mpirun}
mapfile -t domains < <(fi_info -p tcp -t FI_EP_RDM 2>/dev/null | awk '/domain:/ {print $2}' | awk '!seen[$0]++')
if ((${#domains[@]} < 2)); then
  echo "SKIP: tcp offers ${#domains[@]} domain(s) here, two are needed"
  exit 77
fi
for v in $(compgen -e | grep -E '^EFACOLL_'); do unset "$v"; done
nic="${domains[0]},${domains[1]}"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
timeout 280 "$mpiexec" --allow-run-as-root --oversubscribe -np 3 \
  -x LD_PRELOAD="$lib" -x EFACOLL_PROVIDER=tcp -x EFACOLL_NIC="$nic" -x EFACOLL_HOST_BUFFERS=1 \
  -x EFACOLL_CHUNK_SIZE=4096 -x EFACOLL_TIMEOUT=60 -x EFACOLL_DEBUG=INFO -x EFACOLL_DEBUG_SUBSYS=INIT \
  -x OMPI_MCA_pml=ob1 -x OMPI_MCA_btl=self,vader,tcp "$tests" >"$out" 2>&1
rc=$?
grep -vE ' efacoll INFO INIT communicator ' "$out" | tail -15
if ! grep -qF "domain ${domains[0]}+${domains[1]}," "$out"; then
  echo "FAIL: no INFO line with domain ${domains[0]}+${domains[1]}"
  exit 1
fi
exit $rc
