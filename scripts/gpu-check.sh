#!/usr/bin/env bash
# The GPU check in one command: the GPU tests, the attention benchmark and a real-language board
# on a CUDA machine, each part under its own time cap, everything in one folder.
#
# Usage: bash scripts/gpu-check.sh --out DIR [--wheelhouse DIR] [options]
#
# Refuses at once, before any work, where there is no NVIDIA GPU (no nvidia-smi, none listed)
# or torch sees none.  With --wheelhouse (scripts/wheelhouse.sh's, for this machine's Python) it
# installs without a package index: a virtualenv (--venv) on top of the Python that holds
# torch (PYTHON, default python3; its packages stay visible, torch among them), the project
# from this checkout and the rest from the wheelhouse; without it, the active environment (or
# the checkout's .venv, as every script) is used.  It prints the GPU, the driver, torch, CUDA
# and cuDNN, then runs, in this order, each part under `timeout`:
#   tests  tests/plugin/test_gpu.py and test_gpu_flex.py (pytest-xdist, --workers), their
#          junit XML kept;
#   bench  python -m fairseq_relpos.benchmark in fp16 on padded batches of 32, 64, 128 and 256
#          tokens, --bench-repeats rounds: every architecture on the reference path, then the
#          ones flex covers with --attention-impl flex (a training step and beam search against
#          transformer_abs, peak memory, the kernel each kind of attention layer ran); the
#          time cap is shared, two thirds to the reference path;
#   board  with the time left of --budget: leaderboard.sh on a prepared Tatoeba De-En folder
#          (--board-data), the reference study's nine architectures, one seed, the Tatoeba
#          model and budget (2,500 updates of 2,048 tokens, lr 1e-3), fp16, --jobs-per-gpu
#          trainings sharing each GPU; its folder (--board-dir) resumes where a run stopped.
# Into --out: summary.md (versions, each part's outcome and time; printed at the end),
# gpu-check.log (every part's output), gpu-tests.xml, bench-reference.md/.json,
# bench-flex.md/.json, board.md/.json.  A part cut by its cap keeps what it wrote (the
# benchmark's tables and JSON length by length).  The exit status is 0 when every part ran
# passed, 1 otherwise.
#
# Options:
#   --out DIR            where the results go (created)
#   --wheelhouse DIR     install from this wheelhouse, offline
#   --venv DIR           the virtualenv --wheelhouse installs into (default .venv-gpu in the checkout)
#   --parts LIST         some of tests,bench,board (default: tests,bench, which fit one command
#                        of 10 minutes; the board takes another, --parts board)
#   --budget S           seconds for all parts together, installing included (default 560); the
#                        board gets what the others leave, at most --board-time
#   --tests-time S       cap of the tests (default 200)
#   --bench-time S       cap of the benchmark (default 300)
#   --board-time S       cap of the board (default 480)
#   --workers N          pytest-xdist workers of the tests (default 8)
#   --bench-repeats N    timed rounds of the benchmark (default 2)
#   --board-data DIR     a Tatoeba folder from prepare-tatoeba.sh (default .gpu-bundle/tatoeba-de-en
#                        in the checkout)
#   --board-dir DIR      the board's models and translations (default runs/gpu-check-board)
#   --board-updates N    updates per training (default 2500, the Tatoeba study's)
#   --jobs-per-gpu N     trainings sharing a GPU (default 9: the nine systems at once)
#   -h, --help           this help
set -uo pipefail
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "gpu-check.sh: $*" >&2; exit 2; }
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

out="" wheelhouse="" venv="$REPO_ROOT/.venv-gpu" parts="tests,bench" budget=560
tests_time=200 bench_time=300 board_time=480 workers=8 repeats=2
board_data="$REPO_ROOT/.gpu-bundle/tatoeba-de-en" board_dir="$REPO_ROOT/runs/gpu-check-board" board_updates=2500
jobs_per_gpu=9
count() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "$1: expected a positive integer, got '$2'"; }
while [[ $# -gt 0 ]]; do
  [[ "$1" == -h || "$1" == --help ]] && { usage; exit 0; }
  [[ $# -ge 2 ]] || die "$1 needs a value (see --help)"
  case "$1" in
    --out) out="$2" ;;
    --wheelhouse) wheelhouse="$2" ;;
    --venv) venv="$2" ;;
    --parts) parts="$2" ;;
    --budget) count "$1" "$2"; budget="$2" ;;
    --tests-time) count "$1" "$2"; tests_time="$2" ;;
    --bench-time) count "$1" "$2"; bench_time="$2" ;;
    --board-time) count "$1" "$2"; board_time="$2" ;;
    --workers) count "$1" "$2"; workers="$2" ;;
    --bench-repeats) count "$1" "$2"; repeats="$2" ;;
    --board-data) board_data="$2" ;;
    --board-dir) board_dir="$2" ;;
    --board-updates) count "$1" "$2"; board_updates="$2" ;;
    --jobs-per-gpu) count "$1" "$2"; jobs_per_gpu="$2" ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
  shift 2
done
[[ -n "$out" ]] || die "--out is required: the folder the results go to"
for part in ${parts//,/ }; do
  [[ "$part" =~ ^(tests|bench|board)$ ]] || die "--parts: expected some of tests,bench,board, got '$part'"
done
wants() { [[ ",$parts," == *",$1,"* ]]; }

# -- refuse at once where there is no GPU ---------------------------------------------------
command -v nvidia-smi >/dev/null ||
  die "no CUDA GPU here: nvidia-smi is not on PATH (no NVIDIA driver); the GPU check needs an NVIDIA GPU"
gpu_list="$(nvidia-smi -L 2>&1)" || die "no CUDA GPU here: nvidia-smi fails: $gpu_list"
grep -q '^GPU ' <<<"$gpu_list" || die "no CUDA GPU here: nvidia-smi lists no GPU"
if [[ -n "$wheelhouse" ]]; then
  ls "$wheelhouse"/fairseq-0.12.2-*.whl >/dev/null 2>&1 ||
    die "--wheelhouse $wheelhouse: no fairseq 0.12.2 wheel in it (make one with scripts/wheelhouse.sh)"
  base_python="${PYTHON:-python3}"
  # the torch the wheelhouse is installed beside, asked before installing anything
  no_gpu="$("$base_python" -c "import sys, torch
sys.exit(0) if torch.cuda.is_available() else print('torch', torch.__version__, 'built for CUDA', torch.version.cuda, 'sees none')" 2>&1)" ||
    no_gpu="$(tail -n 1 <<<"$no_gpu")"
  [[ -z "$no_gpu" ]] || die "no CUDA GPU for $base_python's torch: $no_gpu"
fi
if wants board; then
  ls -d "$board_data"/data-bin/len* "$board_data"/testsets >/dev/null 2>&1 ||
    die "--board-data $board_data: not a prepared Tatoeba folder (no data-bin/lenN or testsets/; make one with scripts/prepare-tatoeba.sh, or leave out the board: --parts tests,bench)"
fi
mkdir -p "$out" || die "--out $out: cannot create it"
out="$(cd "$out" && pwd)"
log_file="$out/gpu-check.log"
: > "$log_file"
started=$SECONDS

# -- the environment ------------------------------------------------------------------------
if [[ -n "$wheelhouse" ]]; then
  wheelhouse="$(cd "$wheelhouse" && pwd)"
  if [[ ! -x "$venv/bin/python" ]]; then
    "$base_python" -m venv "$venv" || die "--venv $venv: cannot create a virtualenv there"
    # the base Python's packages (torch) stay visible behind the virtualenv's own, also where
    # that Python is itself a virtualenv (whose packages --system-site-packages would not see)
    "$venv/bin/python" - "$base_python" <<'EOF'
import subprocess, sys, sysconfig
paths = subprocess.run([sys.argv[1], "-c", "import sysconfig; p = sysconfig.get_paths(); print(p['purelib']); print(p['platlib'])"],
                       capture_output=True, text=True, check=True).stdout.split()
with open(sysconfig.get_paths()["purelib"] + "/zz-base-python.pth", "w") as pth:
    pth.write("\n".join(dict.fromkeys(paths)) + "\n")
EOF
  fi
  # shellcheck disable=SC1091
  source "$venv/bin/activate"
  # env.sh installs what is missing with pip: from the wheelhouse alone
  export PIP_NO_INDEX=1 PIP_FIND_LINKS="$wheelhouse"
  echo "[gpu-check] installing from $wheelhouse into $venv" | tee -a "$log_file" >&2
fi
# shellcheck disable=SC1091
source "$REPO_ROOT/scripts/lib/env.sh" >>"$log_file" 2>&1 || die "setting up the environment failed (see $log_file)"
cd "$REPO_ROOT"
python - > "$out/summary.md" 2>>"$log_file" <<'EOF' || die "torch sees no CUDA GPU: $(tail -n 1 "$out/summary.md")"
import subprocess, sys
import torch
if not torch.cuda.is_available():
    print(f"torch {torch.__version__} (built for CUDA {torch.version.cuda}) sees no GPU")
    sys.exit(1)
smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.strip().splitlines()
print("# GPU check\n")
for index, line in enumerate(smi):
    print(f"- GPU {index}: {line} (nvidia-smi: name, driver, memory)")
props = torch.cuda.get_device_properties(0)
print(f"- torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}, "
      f"compute capability {props.major}.{props.minor}, {props.multi_processor_count} multiprocessors")
print(f"- Python {sys.version.split()[0]}")
EOF
cat "$out/summary.md"
echo >> "$out/summary.md"
echo "| part | outcome | seconds |" >> "$out/summary.md"
echo "|---|---|--:|" >> "$out/summary.md"
failed=0

# run_part NAME SECONDS OUTFILE COMMAND...: the command under its cap, its stdout into OUTFILE
# (or the log with -), its stderr into the log; its outcome into the summary.  The cap sends
# SIGINT, as Ctrl-C would: pytest then still writes its report and junit XML, and the
# benchmark and the runner stop as they do on Ctrl-C, keeping what they finished
run_part() {
  local name=$1 cap=$2 stdout=$3 began=$SECONDS rc outcome
  shift 3
  echo "[gpu-check] $name (at most $cap s): $*" | tee -a "$log_file" >&2
  if [[ "$stdout" == - ]]; then
    PYTHONUNBUFFERED=1 timeout -s INT --kill-after=30 "$cap" "$@" >>"$log_file" 2>&1
  else
    PYTHONUNBUFFERED=1 timeout -s INT --kill-after=30 "$cap" "$@" >"$stdout" 2>>"$log_file"
  fi
  rc=$?
  case $rc in
    0) outcome="passed" ;;
    124|137) outcome="cut at its cap of $cap s"; failed=1 ;;
    *) outcome="failed (exit $rc)"; failed=1 ;;
  esac
  echo "| $name | $outcome | $((SECONDS - began)) |" >> "$out/summary.md"
  echo "[gpu-check] $name: $outcome after $((SECONDS - began)) s" | tee -a "$log_file" >&2
}

if wants tests; then
  run_part "GPU tests" "$tests_time" - python -m pytest tests/plugin/test_gpu.py tests/plugin/test_gpu_flex.py \
    -n "$workers" -p no:cacheprovider -q -ra --tb=short --show-capture=no --junitxml "$out/gpu-tests.xml"
fi
if wants bench; then
  bench=(python -m fairseq_relpos.benchmark --device cuda --dtype fp16 --padding --lengths 32,64,128,256
         --repeats "$repeats")
  flex_archs="$(python -c "from fairseq_relpos import ARCHITECTURES
from fairseq_relpos.models.architectures import flex_covers
print(','.join(a for a in ARCHITECTURES if flex_covers(a)))" 2>>"$log_file")"
  run_part "benchmark, reference path" $((bench_time * 2 / 3)) "$out/bench-reference.md" \
    "${bench[@]}" --json "$out/bench-reference.json"
  run_part "benchmark, flex" $((bench_time - bench_time * 2 / 3)) "$out/bench-flex.md" \
    "${bench[@]}" --attention-impl flex --archs "$flex_archs" --json "$out/bench-flex.json"
fi
if wants board; then
  left=$((budget - (SECONDS - started)))
  cap=$((left < board_time ? left : board_time))
  if (( cap < 60 )); then
    echo "| board | not run: ${left} s of --budget left | 0 |" >> "$out/summary.md"
  else
    nine="$(python -c "from fairseq_relpos.models.architectures import STUDY_ARCHITECTURES
print(','.join(STUDY_ARCHITECTURES))" 2>>"$log_file")"
    run_part "board" "$cap" - bash scripts/leaderboard.sh --data "$board_data" --systems "$nine" --seeds 1 \
      --lr-grid 1e-3 --updates "$board_updates" --validate-every 500 --patience 10 \
      --gpus "$(grep -c '^GPU ' <<<"$gpu_list")" --jobs-per-gpu "$jobs_per_gpu" --threads "$(nproc)" \
      --out-dir "$board_dir"
    python - "$board_dir/leaderboard" "$out" <<'EOF' 2>>"$log_file"
import json, sys
from pathlib import Path
boards, out = Path(sys.argv[1]), Path(sys.argv[2])
found = sorted(boards.glob("*/board.md"))
if found:
    (out / "board.md").write_text("\n\n".join(f"## {p.parent.name}\n\n{p.read_text()}" for p in found))
    (out / "board.json").write_text(json.dumps({p.parent.name: json.loads((p.parent / "board.json").read_text())
                                                for p in found if (p.parent / "board.json").is_file()}, indent=1))
EOF
  fi
fi

if [[ -f "$out/gpu-tests.xml" ]]; then
  python - "$out/gpu-tests.xml" >> "$out/summary.md" <<'EOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suite = root if root.tag == "testsuite" else root.find("testsuite")
n = {key: int(suite.get(key, 0)) for key in ("tests", "failures", "errors", "skipped")}
print(f"\nGPU tests: {n['tests']} run, {n['failures']} failed, {n['errors']} errors, {n['skipped']} skipped")
EOF
fi
echo -e "\n${SECONDS} s in all; results in $out" >> "$out/summary.md"
echo
cat "$out/summary.md"
exit $failed
