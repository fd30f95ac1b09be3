#!/usr/bin/env bash
# A wheelhouse for a machine without a package index that already has torch (a GPU node):
# every wheel fairseq-relpos needs beside torch, built or fetched for that machine's Python.
#
# Usage: bash scripts/wheelhouse.sh --python 3.12 --out DIR [--without NAMES]
#
# Run where the package index is reachable.  DIR receives, for that Python on Linux x86-64:
# fairseq 0.12.2 built from its source (with its Cython extensions and libbleu), this
# checkout's own wheel (fairseq-relpos, with its test extra's pytest and pytest-xdist), every
# other package of their closure (hydra-core 1.0.7, omegaconf 2.0.6, antlr4-python3-runtime 4.8,
# sacrebleu, sentencepiece, subword-nmt, sacremoses, bitarray, numpy, ...), what building a
# checkout needs (setuptools, wheel) and a pip below 24.1 (newer pips refuse omegaconf 2.0.6's
# metadata).  Never torch, nor its CUDA packages (nvidia-*, cuda-*, triton): the target's own
# torch is used.  On the target:
#   python -m pip install --no-index --find-links DIR fairseq-relpos      (or a checkout: DIR/.. .[test])
# scripts/gpu-check.sh --wheelhouse DIR does this itself.
#
# Options:
#   --python V|PATH    the target's Python: a version (3.12: python3.12 on PATH, else pyenv's
#                      newest 3.12.*) or an interpreter's path
#   --out DIR          the wheelhouse (created; wheels already in it are kept)
#   --without NAMES    comma-separated packages the target already has, left out with what
#                      only they need (e.g. numpy,pandas,matplotlib,numba,torchaudio on an image
#                      that holds them); one that another package needs in another version
#                      is still fetched
#   -h, --help         this help
set -euo pipefail
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "wheelhouse.sh: $*" >&2; exit 2; }
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

python_spec="" out="" without=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --python) [[ $# -ge 2 ]] || die "--python needs a version (3.12) or an interpreter's path"; python_spec="$2"; shift 2 ;;
    --out) [[ $# -ge 2 ]] || die "--out needs a folder"; out="$2"; shift 2 ;;
    --without) [[ $# -ge 2 ]] || die "--without needs comma-separated package names"; without="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ -n "$python_spec" ]] || die "--python is required: the target's Python version (3.12) or an interpreter's path"
[[ -n "$out" ]] || die "--out is required: the folder the wheels go to"

# the interpreter: a path, pythonX.Y on PATH, or pyenv's newest X.Y.*
if [[ "$python_spec" == */* ]]; then
  python="$python_spec"
elif [[ "$python_spec" =~ ^3\.[0-9]+$ ]]; then
  python="$(command -v "python$python_spec" || true)"
  if [[ -z "$python" ]] || ! "$python" -c '' 2>/dev/null; then  # (a pyenv shim of another version fails)
    pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
    python="$(ls -d "$pyenv_root"/versions/"$python_spec".* 2>/dev/null | sort -V | tail -n 1)"
    python="${python:+$python/bin/python}"
  fi
  [[ -n "$python" ]] || die "--python $python_spec: no python$python_spec on PATH and none in pyenv's versions; give its path"
else
  die "--python: expected a version such as 3.12 or an interpreter's path, got '$python_spec'"
fi
[[ -x "$python" ]] || die "--python: $python is not an executable interpreter"
version="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
[[ "$python_spec" == */* || "$version" == "$python_spec" ]] || die "--python $python_spec: $python is Python $version"

mkdir -p "$out"
out="$(cd "$out" && pwd)"
started=$SECONDS
work="$(mktemp -d "${TMPDIR:-/tmp}/wheelhouse.XXXXXX")"
trap 'rm -rf "$work"' EXIT
log() { echo "[wheelhouse] $*" >&2; }

log "Python $version ($python); building in $work"
"$python" -m venv "$work/venv"
pip=("$work/venv/bin/python" -m pip)
"${pip[@]}" install -q "pip<24.1"

# 1. what is built here: fairseq 0.12.2 from its source (its build gets setuptools, wheel and
#    Cython in isolation; no torch there, so its optional torch extensions are left out, as
#    in scripts/lib/env.sh's install) and this checkout
tag="cp${version/./}"
if ls "$out"/fairseq-0.12.2-"$tag"-*.whl >/dev/null 2>&1; then
  log "fairseq 0.12.2 for $tag is there already; building fairseq-relpos"
  "${pip[@]}" wheel -q --no-deps -w "$out" "$REPO_ROOT"
else
  log "building fairseq 0.12.2 and fairseq-relpos"
  "${pip[@]}" wheel -q --no-deps --no-binary fairseq -w "$out" "fairseq==0.12.2" "$REPO_ROOT"
fi

# 2. the rest of the closure, resolved against a torch (and --without's packages) taken as
#    installed: placeholders that only tell pip they are there (torch's version 0 passes any
#    cap a pip configuration puts on torch; the others' 99999 passes lower bounds)
site="$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
for name in torch ${without//,/ }; do
  placeholder_version=$([[ "$name" == torch ]] && echo 0 || echo 99999)
  info="$site/$(echo "$name" | tr '-' '_')-$placeholder_version.dist-info"
  mkdir -p "$info"
  printf 'Metadata-Version: 2.1\nName: %s\nVersion: %s\n' "$name" "$placeholder_version" > "$info/METADATA"
  echo "placeholder" > "$info/INSTALLER"
  : > "$info/RECORD"
done
relpos_wheel="$(ls "$out"/fairseq_relpos-*.whl | sort -V | tail -n 1)"
"${pip[@]}" install -q --dry-run --find-links "$out" --report "$work/report.json" \
  "${relpos_wheel}[test]" "setuptools>=64,<90" wheel >/dev/null
"$work/venv/bin/python" - "$work/report.json" > "$work/needed.txt" <<'EOF'
import json, sys
for item in json.load(open(sys.argv[1]))["install"]:
    meta = item["metadata"]
    if meta["name"].lower().replace("_", "-") not in ("fairseq", "fairseq-relpos"):
        print(f"{meta['name']}=={meta['version']}")
print("pip<24.1")  # installed here already, so not in the report
EOF
forbidden="$(grep -i -E '^(torch|nvidia|cuda|triton)[-_=]' "$work/needed.txt" | grep -v -i '^torchaudio' | tr '\n' ' ' || true)"
[[ -z "$forbidden" ]] || die "the closure asks for packages the wheelhouse must not hold (${forbidden% }): something wants another torch"
log "fetching $(wc -l < "$work/needed.txt") packages"
# a wheel where the index has one for this Python, else built from its source
"${pip[@]}" wheel -q --no-deps --prefer-binary -w "$out" -r "$work/needed.txt"
size_mib="$(du -sm "$out" | cut -f1)"
log "done in $((SECONDS - started)) s: $(ls "$out"/*.whl | wc -l) wheels, ${size_mib} MiB in $out"
