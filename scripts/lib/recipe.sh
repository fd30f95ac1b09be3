# shellcheck shell=bash
# Sourced by every script: its --help (the comment block at its top; a line "@launcher-options"
# in it stands for the options every recipe takes to run on SLURM, launcher-options.txt), then
# the recipe of the same name in Python (python -m relpos_recipes NAME), in the project's
# environment.
relpos_recipe() {
  local name=$1 arg script=${BASH_SOURCE[1]}
  shift
  for arg in "$@"; do
    if [[ "$arg" == -h || "$arg" == --help ]]; then
      awk -v shared="$(dirname "${BASH_SOURCE[0]}")/launcher-options.txt" '
        NR == 1 && /^#!/ { next }
        /^# *@launcher-options/ { while ((getline line < shared) > 0) print line; next }
        /^#/ { sub(/^# ?/, ""); print; next }
        { exit }' "$script"
      exit 0
    fi
    [[ "$arg" == -- ]] && break
  done
  relpos_enter_env
  export TQDM_DISABLE=1  # no progress bars from subword-nmt, sacremoses or fairseq in the logs
  exec python -m relpos_recipes "$name" "$@"
}

# The environment (scripts/lib/env.sh) is checked once per process tree, and never by one of
# srun's tasks: several of them would install into one environment at once.
relpos_enter_env() {
  REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  if [[ -n "${SLURM_STEP_ID:-}" && -n "${SLURM_PROCID:-}" && -z "${PL_ENV_READY:-}" ]]; then
    if [[ -z "${VIRTUAL_ENV:-}" ]]; then
      [[ -x "$REPO_ROOT/.venv/bin/python" ]] || { echo "error: under srun no task sets up the environment: run bash scripts/test.sh --co -q (or any script) once outside srun first" >&2; exit 1; }
      # shellcheck disable=SC1091
      source "$REPO_ROOT/.venv/bin/activate"
    fi
    export PL_ENV_READY="$VIRTUAL_ENV"
  fi
  if [[ -z "${VIRTUAL_ENV:-}" || "${PL_ENV_READY:-}" != "$VIRTUAL_ENV" ]]; then
    # shellcheck disable=SC1091
    source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
    export PL_ENV_READY="$VIRTUAL_ENV"
  fi
}
