"""fairseq-train as a step: ``python -m relpos_recipes.tools.fairseq_train --save-dir DIR --
fairseq-train ...``.

It resumes from ``checkpoint_last.pt``.  A training that reached --max-update, or stopped by
--patience, before it was marked done is done: fairseq would otherwise take one more update
on resuming (it checks the limit after an update), or train until --patience more
evaluations (it does not save the count).  Every checkpoint the step hands on
(``checkpoint_best.pt``, ``checkpoint_last.pt``) must record the model this command trains
(its architecture, position specs and data): a file of another training put in its place is
refused, never resumed from nor handed on.
"""
import argparse
import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from relpos_analysis import fairseq_log

from . import fail, option_value

ZIP_END = b"PK\x05\x06"
# the checkpoint of every --save-interval-updates: checkpoint_EPOCH_UPDATES.pt (its updates the group)
INTERVAL_CHECKPOINT = re.compile(r"checkpoint_\d+_(\d+)\.pt")
# the names of the checkpoints fairseq-train writes (best, last, per epoch, per --save-interval-updates,
# --keep-best-checkpoints): what a training that starts afresh removes, and nothing else
FAIRSEQ_CHECKPOINTS = (r"checkpoint_best\.pt", r"checkpoint_last\.pt", r"checkpoint\d+\.pt", INTERVAL_CHECKPOINT.pattern,
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


# the checkpoints a training step hands on (its in-place outputs besides its log)
HANDED_ON = ("checkpoint_best.pt", "checkpoint_last.pt")


@dataclasses.dataclass
class CheckpointFacts:
    """What a fairseq checkpoint records of the training that wrote it."""

    arch: Optional[str]
    positions: Dict[str, str]  # the position options it records ({"--encoder-pos": "abs_learned"})
    data: Optional[str]  # fairseq-train's DATA (shard folders joined by ':')
    save_dir: Optional[str]
    updates: int
    # the rows of its embeddings: the sizes of the dictionaries it was trained with
    embeddings: Dict[str, int] = dataclasses.field(default_factory=dict)


def checkpoint_facts(checkpoint: Path) -> CheckpointFacts:
    from fairseq_relpos_compat import UntrustedCheckpointError, load_checkpoint

    try:
        state = load_checkpoint(checkpoint, map_location="cpu", mmap=True)
    except UntrustedCheckpointError as refusal:
        fail(str(refusal))
    cfg = state.get("cfg") or {}
    legacy = state.get("args")  # checkpoints of fairseq before its dataclass configuration

    def section(name):
        value = cfg.get(name) if hasattr(cfg, "get") else None
        return value if value is not None else legacy

    def field(holder, name):
        if holder is None:
            return None
        return holder.get(name) if hasattr(holder, "get") else getattr(holder, name, None)

    model = section("model")
    positions = {"--" + name.replace("_", "-"): str(field(model, name))
                 for name in ("encoder_pos", "decoder_pos", "cross_pos", "max_relative_position")
                 if field(model, name) is not None}
    return CheckpointFacts(arch=field(model, "arch") or field(legacy, "arch"), positions=positions,
                           data=field(section("task"), "data"), save_dir=field(section("checkpoint"), "save_dir"),
                           updates=int(state["optimizer_history"][-1]["num_updates"]),
                           embeddings={key.split(".", 1)[0]: int(weights.shape[0])
                                       for key, weights in (state.get("model") or {}).items()
                                       if key.startswith(("encoder.", "decoder."))
                                       and key.endswith("embed_tokens.weight")})


def foreign(checkpoint: Path, facts: CheckpointFacts, save: Path, command: Sequence[str]) -> Optional[str]:
    """How ``checkpoint`` shows that another command trained it (another architecture,
    other position specs, other data), or None."""
    wanted = option_value(command, "--arch")
    if facts.arch and wanted and facts.arch != wanted:
        return f"{checkpoint} is a {facts.arch} model, not --arch {wanted}"
    if facts.arch and wanted:
        recorded, trained = _labels(wanted, [x for option in facts.positions.items() for x in option], command)
        if recorded != trained:
            return f"{checkpoint} is a {recorded} model, not the {trained} this command trains"
    data = command[1] if len(command) > 1 else None
    if facts.data and data and not _same_data(facts.data, facts.save_dir, data, save):
        return f"{checkpoint} was trained on {facts.data}, not on this command's data {data}"
    return None


def _labels(arch: str, recorded: List[str], command: Sequence[str]):
    """The system names (architecture and position specs) of a checkpoint's recorded
    position options and of the command's; equal where the plugin does not know ``arch``."""
    from fairseq_relpos import effective_label

    try:
        return effective_label(arch, recorded), effective_label(arch, command)
    except ValueError:  # not one of the plugin's architectures: its name is all there is to compare
        return arch, arch


def _same_data(recorded: str, recorded_save: Optional[str], data: str, save: Path) -> bool:
    """Whether the data a checkpoint records is ``data``: the same folders, or folders at the
    same place relative to the save folder (the two moved together)."""
    theirs, mine = recorded.split(":"), data.split(":")
    if len(theirs) != len(mine):
        return False
    for then, now in zip(theirs, mine):
        if os.path.normpath(then) == os.path.normpath(now):
            continue
        if not recorded_save or os.path.relpath(then, recorded_save) != os.path.relpath(now, save):
            return False
    return True


def lost_best(save: Path, why: str) -> str:
    return (f"{save / 'checkpoint_best.pt'} is missing and {why}: restore checkpoint_best.pt, or move the "
            "folder's checkpoints away to train afresh")


def stopped_early(log: Path, patience: Optional[str]) -> bool:
    """Whether the last fairseq-train run in ``log`` ended by --patience ``patience``."""
    if not patience or int(patience) <= 0 or not log.exists():
        return False
    return fairseq_log.stopped_early(log.read_text(encoding="utf-8", errors="replace"), int(patience))


def train(save: Path, command) -> None:
    last = save / "checkpoint_last.pt"
    resumed = last.exists()
    if resumed:
        facts = None
        for name in HANDED_ON:
            checkpoint = save / name
            if not checkpoint.exists():
                continue
            check_checkpoint(checkpoint)
            recorded = checkpoint_facts(checkpoint)
            wrong = foreign(checkpoint, recorded, save, command)
            if wrong:
                fail(f"{wrong}: it was not trained by this command; put this training's own {name} back, use "
                     "another --save-dir, or move the folder's checkpoints away to train afresh here")
            facts = recorded if checkpoint == last else facts
        max_update = option_value(command, "--max-update")
        patience = option_value(command, "--patience")
        finished = None
        if max_update and int(max_update) > 0 and facts.updates >= int(max_update):
            finished = f"has reached --max-update {max_update}"
        elif stopped_early(save / "train.log", patience):
            finished = f"stopped early (--patience {patience})"
        if finished:
            if not (save / "checkpoint_best.pt").exists():  # checkpoint_last.pt is no stand-in for it
                fail(lost_best(save, f"{last} {finished}: there is nothing left to train"))
            print(f"{last} {finished}: training had finished")
            return
    # under srun only rank 0 speaks (fairseq's other ranks print their warnings and errors)
    quiet = os.environ.get("SLURM_PROCID", "0") != "0" and os.environ.get("SLURM_STEP_ID") is not None
    code, said = _run_passing_on(command, quiet)
    if code != 0:
        fail(f"fairseq-train failed (exit {code}): {fairseq_log.last_error(said) or 'see ' + str(save / 'train.log')}")
    if not (save / "checkpoint_best.pt").exists():
        if resumed:  # fairseq found nothing left to train: the best checkpoint of that training is gone
            fail(lost_best(save, "fairseq-train, resuming from checkpoint_last.pt, had nothing left to train (its "
                                 "--max-epoch or --max-update was reached)"))
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
