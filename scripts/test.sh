#!/usr/bin/env bash
# Runs the test suite (sets up the environment first, see scripts/lib/env.sh).
#   bash scripts/test.sh                 all tests, on as many workers as cores (pytest-xdist)
#   bash scripts/test.sh -m "not slow"   skip the ones that drive the fairseq command-line tools
#   bash scripts/test.sh tests/plugin/test_schemes.py -k name -n 0   any pytest arguments (-n 0: one process)
set -euo pipefail
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
source "$(dirname "$0")/lib/env.sh"
cd "$REPO_ROOT"
workers=$(nproc)  # before OMP_NUM_THREADS is set: nproc honours it
# one thread per worker: the workers already fill the cores
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
# loadgroup: tests marked xdist_group("NAME") run on one worker, sharing their module fixture;
# the slowest tests are listed at the end: the suite is to stay under 12 minutes on 2 cores
python -m pytest -ra -n "$workers" --dist loadgroup --durations 15 "$@"
