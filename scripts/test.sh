#!/usr/bin/env bash
# Runs the test suite (sets up the environment first, see scripts/lib/env.sh).
#   bash scripts/test.sh                 all tests
#   bash scripts/test.sh -m "not slow"   skip the ones that drive the fairseq CLIs
#   bash scripts/test.sh tests/test_x.py -k name   any pytest arguments
set -euo pipefail
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
source "$(dirname "$0")/lib/env.sh"
cd "$REPO_ROOT"
python -m pytest -ra "$@"
