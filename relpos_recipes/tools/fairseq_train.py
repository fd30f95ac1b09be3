"""fairseq-train as a step: ``python -m relpos_recipes.tools.fairseq_train --save-dir DIR --
fairseq-train ...``.

It resumes from ``checkpoint_last.pt``.  A training that reached --max-update, or stopped by
--patience, before it was marked done is done: fairseq would otherwise take one more update
on resuming (it checks the limit after an update), or train until --patience more
evaluations (it does not save the count).
"""
import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional, Tuple

from relpos_analysis import fairseq_log

from . import fail, option_value

ZIP_END = b"PK\x05\x06"
# the names of the checkpoints fairseq-train writes (best, last, per epoch, per --save-interval-updates,
# --keep-best-checkpoints): what a training that starts afresh removes, and nothing else
FAIRSEQ_CHECKPOINTS = (r"checkpoint_best\.pt", r"checkpoint_last\.pt", r"checkpoint\d+\.pt", r"checkpoint_\d+_\d+\.pt",
                       r"checkpoint\.best_.+\.pt")


def check_checkpoint(path) -> None:
    """An empty or cut-short checkpoint is named here rather than failing inside torch.load:
    torch.save writes a zip archive, whose last 22 bytes are its end-of-archive record."""
    path = Path(path)
    if path.stat().st_size == 0:
        fail(f"{path} is empty: not a checkpoint (cut short while saving?); delete it")
    with open(path, "rb") as f:
        f.seek(max(0, path.stat().st_size - 22))
        if not f.read(4) == ZIP_END:
            fail(f"{path} is truncated: not a complete torch checkpoint (cut short while saving?); delete it")


def checkpoint_facts(checkpoint: Path) -> Tuple[Optional[str], int]:
    """The architecture a fairseq checkpoint records, and the updates it has taken."""
    import torch

    state = torch.load(checkpoint, map_location="cpu", weights_only=False, mmap=True)
    cfg = state.get("cfg") or {}
    model = cfg.get("model") if hasattr(cfg, "get") else None
    arch = getattr(model, "arch", None) or (model.get("arch") if hasattr(model, "get") else None)
    if arch is None and state.get("args") is not None:
        arch = getattr(state["args"], "arch", None)
    return arch, int(state["optimizer_history"][-1]["num_updates"])


def stopped_early(log: Path, patience: Optional[str]) -> bool:
    """Whether the last fairseq-train run in ``log`` ended by --patience ``patience``."""
    if not patience or int(patience) <= 0 or not log.exists():
        return False
    return fairseq_log.stopped_early(log.read_text(encoding="utf-8", errors="replace"), int(patience))


def train(save: Path, command) -> None:
    last = save / "checkpoint_last.pt"
    resumed = last.exists()
    if resumed:
        check_checkpoint(last)
        arch, updates = checkpoint_facts(last)
        wanted = option_value(command, "--arch")
        if arch and wanted and arch != wanted:
            fail(f"{last} is a {arch} model, not --arch {wanted}: it was not trained by this command; use another "
                 "--save-dir, or move it away to train afresh here")
        max_update = option_value(command, "--max-update")
        patience = option_value(command, "--patience")
        finished = None
        if max_update and int(max_update) > 0 and updates >= int(max_update):
            finished = f"has reached --max-update {max_update}"
        elif stopped_early(save / "train.log", patience):
            finished = f"stopped early (--patience {patience})"
        if finished:
            print(f"{last} {finished}: training had finished")
            if not (save / "checkpoint_best.pt").exists():
                shutil.copyfile(last, save / "checkpoint_best.pt")
            return
    # under srun only rank 0 speaks (fairseq's other ranks print their warnings and errors)
    quiet = os.environ.get("SLURM_PROCID", "0") != "0" and os.environ.get("SLURM_STEP_ID") is not None
    code, said = _run_passing_on(command, quiet)
    if code != 0:
        fail(f"fairseq-train failed (exit {code}): {fairseq_log.last_error(said) or 'see ' + str(save / 'train.log')}")
    if not (save / "checkpoint_best.pt").exists():
        if resumed:  # fairseq found nothing left to train: the best checkpoint of that training is gone
            fail(f"{save / 'checkpoint_best.pt'} is missing and fairseq-train, resuming from checkpoint_last.pt, "
                 "had nothing left to train (its --max-epoch or --max-update was reached): restore "
                 "checkpoint_best.pt, or move the folder's checkpoints away to train afresh")
        fail(f"training ended without {save / 'checkpoint_best.pt'} (see {save / 'train.log'})")


def _run_passing_on(command, quiet: bool) -> Tuple[int, List[str]]:
    """Runs ``command``, its output passed on (where ``quiet``, its errors only); its exit code
    and the last lines it passed on."""
    tail: List[str] = []
    with subprocess.Popen(command, stdout=subprocess.DEVNULL if quiet else subprocess.PIPE,
                          stderr=subprocess.PIPE if quiet else subprocess.STDOUT, text=True, errors="replace") as process:
        stream, passed_to = (process.stderr, sys.stderr) if quiet else (process.stdout, sys.stdout)
        for line in stream:
            passed_to.write(line)
            passed_to.flush()
            tail.append(line)
            del tail[:-200]
    return process.returncode, tail


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m relpos_recipes.tools.fairseq_train",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--save-dir", required=True)
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- fairseq-train ...")
    a = ap.parse_args(argv)
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    train(Path(a.save_dir), command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
