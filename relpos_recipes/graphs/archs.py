"""The architectures the recipes train.  The plugin's own are read from its table,
``fairseq_relpos/models/architecture_table.py``, by its file: importing the plugin imports
fairseq and torch (3-4 s of CPU), which every recipe's command, and every SLURM job of it,
would pay before any work.  An architecture the table lacks (fairseq's own, such as
``transformer``, or a typo) is asked of fairseq's registry, in a Python of its own, once per
command; so is a system's label when the training options change its position schemes."""
import functools
import importlib.util
import json
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Dict, List, Sequence, Tuple

from ..engine import StepError
from . import PY

# the model's own name, an architecture too: relpos_transformer with every spec given by option
MODEL = "relpos_transformer"


@functools.lru_cache(maxsize=None)
def _table() -> ModuleType:
    """fairseq_relpos/models/architecture_table.py, loaded by its file (not as part of its
    package, whose import registers the models with fairseq)."""
    package = importlib.util.find_spec("fairseq_relpos")
    path = Path(package.submodule_search_locations[0]) / "models" / "architecture_table.py"
    spec = importlib.util.spec_from_file_location("fairseq_relpos_architecture_table", path)
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    return table


@functools.lru_cache(maxsize=None)
def ours() -> Tuple[str, ...]:
    """The plugin's architectures, in its table's order."""
    return tuple(_table().ARCHITECTURES)


@functools.lru_cache(maxsize=None)
def _fairseqs_architectures() -> Tuple[str, ...]:
    code = ("import json, logging; logging.disable(logging.INFO); import fairseq_relpos\n"
            "from fairseq.models import ARCH_MODEL_REGISTRY\n"
            "print(json.dumps(sorted(ARCH_MODEL_REGISTRY)))")
    proc = subprocess.run([PY, "-c", code], capture_output=True, text=True)
    if proc.returncode:
        raise StepError(f"could not load fairseq to list its architectures "
                        f"({proc.stderr.strip().splitlines()[-1:]})")
    return tuple(json.loads(proc.stdout.splitlines()[-1]))


def check_archs(option: str, archs: Sequence[str]) -> None:
    """Every architecture must be one fairseq knows with this plugin loaded (asked before any
    work, so that a typo does not fail hours later)."""
    others = [arch for arch in archs if arch not in ours() and arch != MODEL]
    unknown = [arch for arch in others if arch not in _fairseqs_architectures()] if others else []
    if unknown:
        raise StepError(f"{option}: unknown architecture {', '.join(unknown)} "
                        f"(fairseq-relpos has {', '.join(sorted(ours()))}; "
                        f"fairseq's own, such as transformer, work too)")


def all_archs() -> List[str]:
    """The plugin's architectures, what table 5 and the leaderboard train by default."""
    return list(ours())


def effective_labels(archs: Sequence[str], train_args: Sequence[str]) -> Dict[str, str]:
    """Each architecture's name as what it trains with ``train_args``: ``transformer_abs``,
    or ``transformer_abs[encoder alibi]`` when an option such as --encoder-pos changes its
    position schemes (fairseq_relpos.effective_label), so that no table calls an ALiBi encoder
    transformer_abs.  Without such an option, the plugin's architectures are their own names,
    as effective_label says, which reads only those options, whole (``--opt value`` or
    ``--opt=value``)."""
    options = _table().POSITION_OPTIONS
    if all(arch in ours() or arch == MODEL for arch in archs) and not any(
            str(arg) in options or str(arg).split("=", 1)[0] in options for arg in train_args):
        return {arch: arch for arch in archs}
    code = ("import json, logging, sys; logging.disable(logging.WARNING)\n"
            "from fairseq_relpos import effective_label\n"
            "archs, args = json.loads(sys.argv[1]), json.loads(sys.argv[2])\n"
            "print(json.dumps({a: effective_label(a, args) for a in archs}))")
    proc = subprocess.run([PY, "-c", code, json.dumps(list(archs)), json.dumps(list(train_args))],
                          capture_output=True, text=True)
    if proc.returncode:
        raise StepError(f"the position options of TRAIN_EXTRA_ARGS: {proc.stderr.strip().splitlines()[-1]}")
    return json.loads(proc.stdout)
