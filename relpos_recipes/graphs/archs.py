"""The architectures the recipes train, asked of the plugin in a Python of its own (importing
fairseq costs seconds, which a recipe's command pays once, here, before any work)."""
import json
import subprocess
from typing import Dict, List, Sequence

from ..engine import StepError
from . import PY


def check_archs(option: str, archs: Sequence[str]) -> None:
    """Every architecture must be one fairseq knows with this plugin loaded (asked before any
    work, so that a typo does not fail hours later)."""
    code = ("import logging, sys; logging.disable(logging.INFO); import fairseq_relpos\n"
            "from fairseq.models import ARCH_MODEL_REGISTRY as R\n"
            "unknown = [a for a in sys.argv[1:] if a not in R]\n"
            "ours = sorted(a for a, m in R.items() if m.__module__.startswith('fairseq_relpos'))\n"
            "print(','.join(unknown)); print(', '.join(ours))")
    proc = subprocess.run([PY, "-c", code, *archs], capture_output=True, text=True)
    if proc.returncode:
        raise StepError(f"could not load fairseq to check {option} ({proc.stderr.strip().splitlines()[-1:]})")
    unknown, ours = proc.stdout.splitlines()[:2]
    if unknown:
        raise StepError(f"{option}: unknown architecture {unknown.replace(',', ', ')} "
                        f"(fairseq-relpos has {ours}; fairseq's own, such as transformer, work too)")


def all_archs() -> List[str]:
    proc = subprocess.run([PY, "-c", "import logging; logging.disable(logging.INFO)\n"
                                     "from fairseq_relpos.models.relpos_transformer import ARCHITECTURES\n"
                                     "print('\\n'.join(ARCHITECTURES))"], capture_output=True, text=True, check=True)
    return proc.stdout.split()


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
