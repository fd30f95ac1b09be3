"""What the recipes hand the report and the board of each system: its hypotheses, their
log-probabilities (the failure columns' log2 p/token) and, with --oracle-length, its
oracle-length decoding paired with its free one (docs/analysis.md)."""
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

ORACLE = ".oracle"  # TESTSET.oracle/: a model's oracle-length translations beside its free ones


def oracle_folder(model: Path, test_set: str) -> Path:
    return model / f"{test_set}{ORACLE}"


def system_options(systems: Dict[str, Sequence[Path]], test_set: str, oracle: bool,
                   hypotheses: str = "hyp.txt") -> Tuple[List[str], List[Path]]:
    """The options naming each system (one model folder per seed) for relpos-report or
    relpos-leaderboard, and the files they read: ``--system NAME=HYP[,HYP...]`` and
    ``--system-scores NAME=SCORES[,...]``; with ``oracle``, each system's oracle-length
    decoding as ``NAME-oracle`` paired with it (``--oracle-decoding NAME-oracle=NAME``),
    listed after every free system."""
    named = [(name, [Path(f) / test_set for f in folders]) for name, folders in systems.items()]
    if oracle:
        named += [(f"{name}-oracle", [oracle_folder(Path(f), test_set) for f in folders])
                  for name, folders in systems.items()]
    args: List[str] = []
    inputs: List[Path] = []
    for name, outs in named:
        hyps, scores = [out / hypotheses for out in outs], [out / "hyp.scores" for out in outs]
        args += ["--system", f"{name}=" + ",".join(map(str, hyps)),
                 "--system-scores", f"{name}=" + ",".join(map(str, scores))]
        inputs += hyps + scores
    if oracle:
        for name in systems:
            args += ["--oracle-decoding", f"{name}-oracle={name}"]
    return args, inputs
