#!/usr/bin/env bash
# docs/configuration.md must list exactly what the parameter table holds.
set -euo pipefail
params_tool=$1 doc=$2
if diff <("$params_tool") <(sed -n '/^| variable/,$p' "$doc"); then
  echo "1 passed, 0 failed"
else
  echo "docs/configuration.md is stale: regenerate it with efacoll_params"
  echo "0 passed, 1 failed"
  exit 1
fi
