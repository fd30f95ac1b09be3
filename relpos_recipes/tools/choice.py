"""The leaderboard's choice of each scheme's learning rate, and the table of every choice:
``python -m relpos_recipes.tools.choice {choose-lr,tuning} ...``."""
import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from relpos_analysis import fairseq_log
from relpos_analysis.tuning import GridPoint, SchemeTuning, Tuning, read_scheme_tuning

from ..engine import StepError, manifest
from ..engine.manifest import ended_by_slurm
from . import run_parsed


def choose_lr(a) -> None:
    """The learning rate whose training reached the lowest dev loss, among those that
    finished (a checkpoint_best.pt and a dev evaluation), with every grid point's dev loss,
    updates and failure, as a :class:`~relpos_analysis.tuning.SchemeTuning`."""
    grid = {}
    for spec in a.points:
        lr, _, folder = spec.partition("=")
        grid[lr] = _grid_point(Path(folder))
    finished = {lr: point.dev_loss for lr, point in grid.items() if point.failure is None}
    chosen = min(finished, key=lambda lr: (finished[lr], float(lr))) if finished else None
    choice = SchemeTuning(grid, chosen)
    Path(a.out).write_text(json.dumps(choice.as_json(), indent=1) + "\n", encoding="utf-8")
    # the rate alone: what the seeds' trainings follow, unchanged when only the grid around it grows
    Path(a.out_rate).write_text(f"{chosen}\n", encoding="utf-8")
    print(f"chosen: {chosen}" + "".join(f"\n  {lr}: {asdict(p)}" for lr, p in grid.items()))


def _grid_point(folder: Path) -> GridPoint:
    """A grid point's dev loss and updates (its train.log), or why it has none: its training
    failed (the error its manifest records; SLURM's state where SLURM ended its job), did not
    finish, or never evaluated."""
    try:
        record = manifest.at(folder, "train")
    except StepError as damaged:
        return GridPoint(None, None, str(damaged))
    ended = ended_by_slurm(record)
    if record is not None and record.status == "failed":
        return GridPoint(None, None, ended or record.error or "failed")
    try:
        text = (folder / "train.log").read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        text = ""
    except OSError as err:
        return GridPoint(None, None, f"{folder / 'train.log'} cannot be read: {err.strerror}")
    losses = fairseq_log.dev_losses(text)
    failure = None
    if record is None or record.status != "done" or not (folder / "checkpoint_best.pt").exists():
        failure = ended or "did not finish"
    elif not losses:
        failure = "no dev evaluation in its train.log"
    return GridPoint(min(losses) if losses else None, fairseq_log.last_updates(text), failure)


def tuning(a) -> None:
    """The schemes' choices (choose-lr's files) as one table for the leaderboard; a scheme
    whose choice failed before writing its file, with an empty grid."""
    schemes = {}
    for spec in a.choices:
        scheme, _, path = spec.partition("=")
        exists = Path(path).is_file()
        schemes[scheme] = read_scheme_tuning(path, f"{scheme}=") if exists else SchemeTuning({}, None)
    Path(a.out).write_text(json.dumps(Tuning(a.metric, schemes).as_json(), indent=1) + "\n", encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m relpos_recipes.tools.choice", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="tool", required=True)
    p = sub.add_parser("choose-lr")
    p.add_argument("--out", required=True)
    p.add_argument("--out-rate", required=True)
    p.add_argument("points", nargs="+", help="LR=TRAINING_FOLDER")
    p.set_defaults(run=choose_lr)
    p = sub.add_parser("tuning")
    p.add_argument("--out", required=True)
    p.add_argument("--metric", required=True)
    p.add_argument("choices", nargs="+", help="SCHEME=CHOICE_FILE")
    p.set_defaults(run=tuning)
    return run_parsed(ap, argv)


if __name__ == "__main__":
    sys.exit(main())
