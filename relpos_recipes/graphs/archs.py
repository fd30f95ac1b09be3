"""The architectures the recipes train, asked of the plugin in a Python of its own (importing
fairseq costs seconds, which a recipe's command pays once, here, before any work).  The
plugin's own table needs fairseq (registering the architectures is what importing the plugin
does), and the check needs fairseq's registry anyway (fairseq's own architectures are
accepted), so one interpreter answers both, once per command."""
import functools
import json
import subprocess
from typing import Dict, List, NamedTuple, Sequence, Tuple

from ..engine import StepError
from . import PY


class Registry(NamedTuple):
    every: Tuple[str, ...]  # every architecture fairseq knows with the plugin loaded
    ours: Tuple[str, ...]  # the plugin's, in its table's order (fairseq_relpos.models.architectures)


@functools.lru_cache(maxsize=None)
def _registry() -> Registry:
    code = ("import json, logging; logging.disable(logging.INFO); import fairseq_relpos\n"
            "from fairseq.models import ARCH_MODEL_REGISTRY\n"
            "from fairseq_relpos.models.architectures import ARCHITECTURES\n"
            "print(json.dumps([sorted(ARCH_MODEL_REGISTRY), list(ARCHITECTURES)]))")
    proc = subprocess.run([PY, "-c", code], capture_output=True, text=True)
    if proc.returncode:
        raise StepError(f"could not load fairseq to list its architectures "
                        f"({proc.stderr.strip().splitlines()[-1:]})")
    every, ours = json.loads(proc.stdout.splitlines()[-1])
    return Registry(tuple(every), tuple(ours))


def check_archs(option: str, archs: Sequence[str]) -> None:
    """Every architecture must be one fairseq knows with this plugin loaded (asked before any
    work, so that a typo does not fail hours later)."""
    registry = _registry()
    unknown = [arch for arch in archs if arch not in registry.every]
    if unknown:
        raise StepError(f"{option}: unknown architecture {', '.join(unknown)} "
                        f"(fairseq-relpos has {', '.join(sorted(registry.ours))}; "
                        f"fairseq's own, such as transformer, work too)")


def all_archs() -> List[str]:
    """The plugin's architectures, what table 5 and the leaderboard train by default."""
    return list(_registry().ours)


def effective_labels(archs: Sequence[str], train_args: Sequence[str]) -> Dict[str, str]:
    """Each architecture's name as what it trains with ``train_args``: ``transformer_abs``,
    or ``transformer_abs[encoder alibi]`` when an option such as --encoder-pos changes its
    position schemes (fairseq_relpos.effective_label), so that no table calls an ALiBi encoder
    transformer_abs."""
    code = ("import json, logging, sys; logging.disable(logging.WARNING)\n"
            "from fairseq_relpos import effective_label\n"
            "archs, args = json.loads(sys.argv[1]), json.loads(sys.argv[2])\n"
            "print(json.dumps({a: effective_label(a, args) for a in archs}))")
    proc = subprocess.run([PY, "-c", code, json.dumps(list(archs)), json.dumps(list(train_args))],
                          capture_output=True, text=True)
    if proc.returncode:
        raise StepError(f"the position options of TRAIN_EXTRA_ARGS: {proc.stderr.strip().splitlines()[-1]}")
    return json.loads(proc.stdout)
