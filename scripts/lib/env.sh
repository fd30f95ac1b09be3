# Sourced by the scripts: enter a Python environment with fairseq-relpos installed.
#
# Uses the active virtualenv if there is one, else creates (once) .venv in the checkout.
# Installs torch only when it is missing (RELPOS_TORCH_SPEC, default torch==2.13.0, whose
# CPU wheel is what the CI machines get), keeps pip below 24.1 (newer pips reject
# omegaconf 2.0.6's metadata, which fairseq 0.12.2 needs) and installs this checkout in
# editable mode with its test extra.  Re-running does nothing once the environment matches.
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
RELPOS_TORCH_SPEC="${RELPOS_TORCH_SPEC:-torch==2.13.0}"

relpos_log() { echo "[fairseq-relpos] $*" >&2; }

if [[ -z "${VIRTUAL_ENV:-}" ]]; then
  if [[ ! -x "$REPO_ROOT/.venv/bin/python" ]]; then
    relpos_log "creating $REPO_ROOT/.venv"
    "${PYTHON:-python3}" -m venv "$REPO_ROOT/.venv"
  fi
  # shellcheck disable=SC1091
  source "$REPO_ROOT/.venv/bin/activate"
fi

relpos_install_stamp="$VIRTUAL_ENV/.fairseq-relpos-installed"
# which checkout the environment serves (first line), and how it was set up: a change to the
# latter sets it up again; another checkout that still exists is never taken over (pip would
# point the editable install at this one while that one runs)
relpos_wanted_stamp="$REPO_ROOT"$'\n'"$(cat "$REPO_ROOT/setup.py" "$REPO_ROOT/pyproject.toml" "${BASH_SOURCE[0]}" | cksum)"
relpos_served="$(head -n 1 "$relpos_install_stamp" 2>/dev/null || true)"
if [[ -n "$relpos_served" && "$relpos_served" != "$REPO_ROOT" && -d "$relpos_served" ]]; then
  relpos_log "error: the environment $VIRTUAL_ENV serves the checkout $relpos_served (fairseq-relpos is"
  relpos_log "installed from there in editable mode), not this one ($REPO_ROOT). Deactivate it (this"
  relpos_log "checkout then gets its own .venv), or give this checkout an environment of its own:"
  relpos_log "python3 -m venv DIR && source DIR/bin/activate"
  exit 1
fi
# finding the packages, not importing them: importing torch and fairseq costs about 3 s,
# on every script's start
if [[ "$(cat "$relpos_install_stamp" 2>/dev/null)" != "$relpos_wanted_stamp" ]] ||
   ! python -c "import importlib.util as u, sys
sys.exit(not all(map(u.find_spec, ('fairseq_relpos_compat', 'fairseq', 'torch'))))" 2>/dev/null; then
  relpos_log "setting up $VIRTUAL_ENV"
  python -m pip install -q --no-compile "pip<24.1"
  # torch (where it is missing) in the same pip run as the rest: one resolution, not two
  # (24 s against 33 s with pip's cache warm)
  relpos_torch=()
  if ! python -c "import torch" 2>/dev/null; then
    relpos_log "installing $RELPOS_TORCH_SPEC"
    relpos_torch=("$RELPOS_TORCH_SPEC")
  fi
  python -m pip install -q --no-compile ${relpos_torch[@]+"${relpos_torch[@]}"} -e "$REPO_ROOT[test]"
  # Byte-compiled here, on all cores, once (about 15 s on 2).  Left to the first import, the
  # modules are never compiled to disk where PYTHONDONTWRITEBYTECODE is set (as on our
  # development machines), and every fairseq command compiles torch and fairseq again: about
  # 3 s of CPU a process, half of the test suite's CPU time.  The packages' own test suites
  # (their tests/ folders, a quarter of the files) are never imported, so not compiled.
  # (torch ships a test file in Python 3.12 syntax, so compileall's status is not an error.)
  relpos_log "byte-compiling $VIRTUAL_ENV"
  python -m compileall -qq -j 0 -x 'site-packages/.+/tests?/' "$(python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")" \
    "$REPO_ROOT/fairseq_relpos" "$REPO_ROOT/relpos_recipes" "$REPO_ROOT/relpos_analysis" "$REPO_ROOT/fairseq_relpos_compat.py" || true
  echo "$relpos_wanted_stamp" > "$relpos_install_stamp"
fi
unset relpos_install_stamp relpos_wanted_stamp relpos_served relpos_torch
