# shellcheck shell=bash
# Sourced by every script: its --help (the comment block at its top), then the recipe of the
# same name in Python (python -m recipes NAME, see recipes/), in the project's environment.
relpos_recipe() {
  local name=$1 arg script=${BASH_SOURCE[1]}
  shift
  for arg in "$@"; do
    if [[ "$arg" == -h || "$arg" == --help ]]; then
      awk 'NR == 1 && /^#!/ { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$script"
      exit 0
    fi
    [[ "$arg" == -- ]] && break
  done
  # the environment (scripts/lib/env.sh) is checked once per process tree
  if [[ -z "${VIRTUAL_ENV:-}" || "${PL_ENV_READY:-}" != "$VIRTUAL_ENV" ]]; then
    # shellcheck disable=SC1091
    source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
    export PL_ENV_READY="$VIRTUAL_ENV"
  fi
  export TQDM_DISABLE=1  # no progress bars from subword-nmt, sacremoses or fairseq in the logs
  PYTHONPATH="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)${PYTHONPATH:+:$PYTHONPATH}" \
    exec python -m recipes "$name" "$@"
}
