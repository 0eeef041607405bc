#!/usr/bin/env bash
# The Basalt benchmark, one command: ./bench/run.sh [--quick] [--with-postgraphile] [...]
# Starts a throwaway Postgres, loads the dataset, builds and starts release basalt, measures
# Basalt, the raw-SQL floor (pgbench) and optionally PostGraphile. See bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/bench.py "$@"
