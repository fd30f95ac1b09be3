"""The environment variables that steer the recipes, read once per command into one typed
object (``RecipeEnvironment.read()``), and handed by name to a recipe's SLURM jobs
(``RECIPE_ENVIRONMENT``, ``Launch.environment``), whose commands read them again."""
import dataclasses
import os
import shlex
from pathlib import Path
from typing import Mapping, Optional, Tuple


@dataclasses.dataclass(frozen=True)
class RecipeEnvironment:
    smoke: bool = False  # SMOKE=1: every step on tiny data and models
    smoke_data: Optional[Path] = None  # SMOKE_DATA: the small local data a smoke run reads; None: its default
    train_extra_args: Tuple[str, ...] = ()  # TRAIN_EXTRA_ARGS: more fairseq-train options of the studies
    report_extra_args: Tuple[str, ...] = ()  # REPORT_EXTRA_ARGS: more relpos-report options of the studies
    report_tokenize: str = "13a"  # REPORT_TOKENIZE: the studies' BLEU tokenization (none: tokenized text)
    arch_override: str = ""  # RELPOS_ARCH_OVERRIDE: one architecture for every system of a study
    skip_report: bool = False  # SKIP_REPORT=1: the studies stop before their reports

    @classmethod
    def read(cls, environ: Mapping[str, str] = os.environ) -> "RecipeEnvironment":
        data = environ.get("SMOKE_DATA")
        return cls(smoke=environ.get("SMOKE", "0") == "1", smoke_data=Path(data) if data else None,
                   train_extra_args=tuple(shlex.split(environ.get("TRAIN_EXTRA_ARGS", ""))),
                   report_extra_args=tuple(shlex.split(environ.get("REPORT_EXTRA_ARGS", ""))),
                   report_tokenize=environ.get("REPORT_TOKENIZE", "13a"),
                   arch_override=environ.get("RELPOS_ARCH_OVERRIDE", ""),
                   skip_report=environ.get("SKIP_REPORT") == "1")


#: the variables above, and the threads of a CPU training, handed to a recipe's SLURM jobs
RECIPE_ENVIRONMENT = ("SMOKE", "SMOKE_DATA", "TRAIN_EXTRA_ARGS", "REPORT_TOKENIZE", "REPORT_EXTRA_ARGS",
                      "RELPOS_ARCH_OVERRIDE", "SKIP_REPORT", "OMP_NUM_THREADS")
