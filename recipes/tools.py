"""The commands of the recipes' steps that are not a tool of their own (fairseq, subword-nmt,
sacremoses, scripts/lib/*.py): ``python -m recipes.tools NAME ...``.

Each writes exactly the outputs it is given (the engine hands it temporary names and renames
them when it succeeds) and fails with ``error: ...`` naming the file at fault.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, NoReturn, Optional, Sequence

LIB = Path(__file__).resolve().parents[1] / "scripts" / "lib"
# parallel start-up of sacremoses and subword-nmt only pays off on large inputs
PARALLEL_FROM_LINES = 200_000


def fail(message: str) -> NoReturn:
    raise SystemExit(f"error: {message}")


def count_lines(path) -> int:
    with open(path, "rb") as f:
        return sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))


def workers_for(lines: int, threads: int) -> int:
    return threads if lines > PARALLEL_FROM_LINES else 1


def sacremoses(lang: str, jobs: int, *commands: str) -> List[str]:
    return ["sacremoses", "-q", "-l", lang, "-j", str(jobs), *commands]


# ----------------------------------------------------------------------------------------
# text
# ----------------------------------------------------------------------------------------
def textproc(a) -> None:
    """Concatenates the inputs and normalises/tokenises them: moses = punctuation
    normalisation + tokenisation (sacremoses, aggressive hyphen splitting, XML escaping, as
    Moses' tokenizer.perl -a); normalize = punctuation only (text that SentencePiece
    segments); none = as it is."""
    lines = sum(count_lines(p) for p in a.inputs)
    if a.parallel_to:
        other = sum(count_lines(p) for p in a.parallel_to)
        if other != lines:
            fail(f"{' + '.join(a.inputs)} has {lines} lines but {' + '.join(a.parallel_to)} has {other}: "
                 "the two sides of a parallel corpus must have one line per pair")
    jobs = workers_for(lines, a.threads)
    commands = {"moses": ("normalize", "tokenize", "-a", "-x"), "normalize": ("normalize",)}
    with open(a.out, "wb") as out:
        if a.mode == "none":
            for path in a.inputs:
                with open(path, "rb") as f:
                    shutil.copyfileobj(f, out)
            return
        process = subprocess.Popen(sacremoses(a.lang, jobs, *commands[a.mode]), stdin=subprocess.PIPE, stdout=out)
        try:
            for path in a.inputs:
                with open(path, "rb") as f:
                    shutil.copyfileobj(f, process.stdin)
        finally:
            process.stdin.close()
        if process.wait() != 0:
            fail(f"sacremoses failed on {', '.join(a.inputs)}")
    if count_lines(a.out) != lines:
        fail(f"sacremoses wrote {count_lines(a.out)} lines for the {lines} of {', '.join(a.inputs)}")


def concat_lines(a) -> None:
    """Every N lines (1..N, N+1..2N, ...) joined by a space; a shorter last group stays."""
    with open(a.input, encoding="utf-8", newline="\n") as f:
        rows = f.read().split("\n")
    if rows and rows[-1] == "":
        rows.pop()
    with open(a.out, "w", encoding="utf-8", newline="\n") as out:
        for start in range(0, len(rows), a.n):
            out.write(" ".join(rows[start:start + a.n]) + "\n")


def longer_side(a) -> None:
    """The longer of each pair's segmented sides, whose token count is the pair's length in
    the reports: the training filter drops a pair by either side."""
    with open(a.src, encoding="utf-8", newline="\n") as s, open(a.tgt, encoding="utf-8", newline="\n") as t, \
            open(a.out, "w", encoding="utf-8", newline="\n") as out:
        for source, target in zip(s, t):
            source, target = source.rstrip("\n"), target.rstrip("\n")
            out.write((source if len(source.split()) >= len(target.split()) else target) + "\n")


def write_env(a) -> None:
    with open(a.out, "w", encoding="utf-8") as out:
        for setting in a.settings:
            if "=" not in setting:
                fail(f"write-env: expected KEY=VALUE, got {setting!r}")
            out.write(setting + "\n")


def testset_meta(a) -> None:
    """meta.env of a built test set, after checking that its files have one line per pair."""
    folder = Path(a.dir)
    counts = {name: count_lines(folder / name) for name in
              (f"raw.{a.src}", f"raw.{a.tgt}", f"seg.{a.src}", f"seg.{a.tgt}")}
    if len(set(counts.values())) != 1:
        fail(f"test set {a.name} in {folder}: its files differ in lines ("
             + ", ".join(f"{k} {v}" for k, v in counts.items()) + ")")
    lines = counts[f"raw.{a.src}"]
    with open(a.out, "w", encoding="utf-8") as out:
        out.write(f"NAME={a.name}\nPREP_DIR=../..\nPAIR={a.pair}\nSRC={a.src}\nTGT={a.tgt}\nLINES={lines}\n")
    print(f"{a.name}: {lines} pairs -> {folder}")


def cut_lines(a) -> None:
    """Lines FIRST..LAST (1-based, inclusive) of IN to OUT: the SMOKE stand-in corpora."""
    with open(a.input, encoding="utf-8", newline="\n") as f:
        rows = f.read().split("\n")
    if rows and rows[-1] == "":
        rows.pop()
    rows = rows[a.first - 1:a.last]
    if not rows:
        fail(f"{a.input} has no lines {a.first}-{a.last}")
    with open(a.out, "w", encoding="utf-8", newline="\n") as out:
        out.write("\n".join(rows) + "\n")


# ----------------------------------------------------------------------------------------
# undoing the segmentation and the tokenisation of hypotheses
# ----------------------------------------------------------------------------------------
def deseg_file(seg: str, spm_model: str, source: str, out: str) -> None:
    if seg == "bpe":
        joiner = re.compile(r"(@@ )|(@@ ?$)")
        with open(source, encoding="utf-8", newline="\n") as f, open(out, "w", encoding="utf-8", newline="\n") as o:
            for line in f:
                o.write(joiner.sub("", line.rstrip("\n")) + "\n")
    elif seg == "spm":
        subprocess.run([sys.executable, str(LIB / "spm.py"), "decode", "--model", spm_model,
                        "--input", source, "--output", out], check=True)
    else:
        fail(f"unknown segmentation {seg!r} (bpe or spm)")


def detok_file(textproc_mode: str, lang: str, source: str, out: str) -> None:
    if textproc_mode == "moses":
        with open(source, "rb") as f, open(out, "wb") as o:
            if subprocess.run(sacremoses(lang, 1, "detokenize", "-x"), stdin=f, stdout=o).returncode:
                fail(f"sacremoses detokenize failed on {source}")
    else:
        shutil.copyfile(source, out)
    if count_lines(out) != count_lines(source):
        fail(f"detokenization of {source}: {count_lines(out)} lines out of {count_lines(source)}")


def deseg(a) -> None:
    deseg_file(a.seg, a.spm_model, a.input, a.out)


# ----------------------------------------------------------------------------------------
# fairseq
# ----------------------------------------------------------------------------------------
ZIP_END = b"PK\x05\x06"


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


def option_value(argv: Sequence[str], name: str) -> Optional[str]:
    """The value an argument list gives option ``name``: the last one, as argparse takes it."""
    value = None
    for k, arg in enumerate(argv):
        if arg == name and k + 1 < len(argv):
            value = argv[k + 1]
        elif arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
    return value


def finished_updates(checkpoint: Path) -> int:
    import torch

    state = torch.load(checkpoint, map_location="cpu", weights_only=False, mmap=True)
    return int(state["optimizer_history"][-1]["num_updates"])


def stopped_early(log: Path, patience: Optional[str]) -> bool:
    """Whether the last fairseq-train run in ``log`` ended by --patience ``patience``."""
    if not patience or int(patience) <= 0 or not log.exists():
        return False
    text = log.read_text(encoding="utf-8", errors="replace")
    last_run = text[text.rfind("| fairseq_cli.train | {'_name'"):]
    return (f"early stop since valid performance hasn't improved for last {int(patience)} runs" in last_run
            and "| fairseq_cli.train | done training in" in last_run)


def train(a) -> None:
    """fairseq-train into --save-dir, resuming from checkpoint_last.pt.  A training that
    reached --max-update, or stopped by --patience, before it was marked done is done:
    fairseq would otherwise take one more update on resuming (it checks the limit after an
    update), or train until --patience more evaluations (it does not save the count)."""
    save = Path(a.save_dir)
    last = save / "checkpoint_last.pt"
    if last.exists():
        check_checkpoint(last)
        max_update = option_value(a.command, "--max-update")
        patience = option_value(a.command, "--patience")
        finished = None
        if max_update and int(max_update) > 0 and finished_updates(last) >= int(max_update):
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
    code = subprocess.run(a.command, stdout=subprocess.DEVNULL if quiet else None).returncode
    if code != 0:
        fail(f"fairseq-train failed (exit {code}; see {save / 'train.log'})")
    if not (save / "checkpoint_best.pt").exists():
        fail(f"training ended without {save / 'checkpoint_best.pt'} (see {save / 'train.log'})")


def read_env(path: Path) -> dict:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        fail(f"{path} is missing")
    return dict(line.split("=", 1) for line in lines if "=" in line)


def translate(a) -> None:
    """fairseq-generate on a test set of build-test-sets.sh, then each sentence's best
    hypothesis in source order (hyp.seg), the segmentation undone (hyp.tok) and the
    tokenisation undone (hyp.txt).  Every sentence gets its translation, or the step fails:
    a source the model cannot take is an error, never an empty hypothesis."""
    testset = Path(a.testset)
    meta = read_env(testset / "meta.env")
    work = testset.parent.parent
    if not (work / "segmentation.env").exists():  # an older version's absolute PREP_DIR
        work = Path(meta.get("PREP_DIR", work))
    prep = read_env(work / "segmentation.env")
    checkpoint = option_value(a.command, "--path")
    check_checkpoint(checkpoint)
    tail: List[str] = []
    with open(a.log, "w", encoding="utf-8") as log:
        process = subprocess.Popen(a.command, stdout=log, stderr=subprocess.PIPE, text=True, errors="replace")
        for line in process.stderr:
            sys.stderr.write(line)
            tail.append(line)
            del tail[:-200]
        code = process.wait()
    if code != 0:
        too_long = next((m.group(0) for m in map(_TOO_LONG.search, tail) if m), None)
        if too_long:
            fail(f"{checkpoint} cannot translate {testset}: a source is longer than the model's positions "
                 f"({too_long}). Translate a test set of shorter sentences, or use a model with more "
                 "positions (the hypothesis of a sentence that was not translated is never left empty)")
        fail("fairseq-generate failed (see the lines above)")
    subprocess.run([sys.executable, str(LIB / "gen_output.py"), "--log", a.log, "--n", meta["LINES"],
                    "--out", a.hyp_seg], check=True)
    tgt = prep["TGT"]
    deseg_file(prep["SEG"], str(work / "seg" / f"spm.{tgt}.model"), a.hyp_seg, a.hyp_tok)
    detok_file(prep["TEXTPROC"], tgt, a.hyp_tok, a.hyp_txt)
    with open(a.log, encoding="utf-8", errors="replace") as log:
        for line in log:
            if line.startswith("Generate test with beam"):
                print(line.rstrip("\n"))


_DEV_LOSS = re.compile(r"\| valid on '[^']+' subset \| loss ([\d.]+)")
_UPDATES = re.compile(r"num_updates[= ](\d+)")


def choose_lr(a) -> None:
    """The learning rate whose training reached the lowest dev loss, among those that
    finished (a checkpoint_best.pt and a dev evaluation), with every grid point's dev loss,
    updates and failure: {"grid": {LR: {...}}, "chosen": LR or null}."""
    grid = {}
    for spec in a.points:
        lr, _, folder = spec.partition("=")
        grid[lr] = _grid_point(Path(folder))
    finished = {lr: point["dev_loss"] for lr, point in grid.items() if point["failure"] is None}
    chosen = min(finished, key=lambda lr: (finished[lr], float(lr))) if finished else None
    Path(a.out).write_text(json.dumps({"grid": grid, "chosen": chosen}, indent=1) + "\n", encoding="utf-8")
    # the rate alone: what the seeds' trainings follow, unchanged when only the grid around it grows
    Path(a.out_rate).write_text(f"{chosen}\n", encoding="utf-8")
    print(f"chosen: {chosen}" + "".join(f"\n  {lr}: {p}" for lr, p in grid.items()))


def _grid_point(folder: Path) -> dict:
    log = folder / "train.log"
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    losses = [float(x) for x in _DEV_LOSS.findall(text)]
    updates = [int(x) for x in _UPDATES.findall(text)]
    failure = None
    try:
        record = json.loads((folder / ".steps" / "train.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = {}
    if record.get("status") == "failed":
        failure = record.get("error", "failed")
    elif record.get("status") != "done" or not (folder / "checkpoint_best.pt").exists():
        failure = "did not finish"
    elif not losses:
        failure = "no dev evaluation in its train.log"
    return {"dev_loss": min(losses) if losses else None, "updates": updates[-1] if updates else None,
            "failure": failure}


def tuning(a) -> None:
    """The schemes' choices (choose-lr's files) as one table for the leaderboard."""
    schemes = {}
    for spec in a.choices:
        scheme, _, path = spec.partition("=")
        try:
            schemes[scheme] = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            schemes[scheme] = {"grid": {}, "chosen": None}
    Path(a.out).write_text(json.dumps({"metric": a.metric, "schemes": schemes}, indent=1) + "\n", encoding="utf-8")


_TOO_LONG = re.compile(r"Size of sample #\d+ is invalid.*max_positions=\(\d+, \d+\)")


# ----------------------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m recipes.tools", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="tool", required=True)

    p = sub.add_parser("textproc")
    p.add_argument("--mode", choices=("moses", "normalize", "none"), required=True)
    p.add_argument("--lang", required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--parallel-to", nargs="+", default=[], help="the other side's inputs (line counts checked)")
    p.add_argument("--out", required=True)
    p.add_argument("inputs", nargs="+")
    p.set_defaults(run=textproc)

    p = sub.add_parser("concat-lines")
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(run=concat_lines)

    p = sub.add_parser("longer-side")
    p.add_argument("--src", required=True)
    p.add_argument("--tgt", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(run=longer_side)

    p = sub.add_parser("write-env")
    p.add_argument("--out", required=True)
    p.add_argument("settings", nargs="*")
    p.set_defaults(run=write_env)

    p = sub.add_parser("testset-meta")
    for option in ("--dir", "--name", "--pair", "--src", "--tgt", "--out"):
        p.add_argument(option, required=True)
    p.set_defaults(run=testset_meta)

    p = sub.add_parser("cut-lines")
    p.add_argument("--input", required=True)
    p.add_argument("--first", type=int, required=True)
    p.add_argument("--last", type=int, required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(run=cut_lines)

    p = sub.add_parser("deseg")
    p.add_argument("--seg", required=True)
    p.add_argument("--spm-model", default="")
    p.add_argument("--input", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(run=deseg)

    p = sub.add_parser("train")
    p.add_argument("--save-dir", required=True)
    p.add_argument("command", nargs=argparse.REMAINDER)
    p.set_defaults(run=train)

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

    p = sub.add_parser("translate")
    p.add_argument("--testset", required=True)
    for option in ("--log", "--hyp-seg", "--hyp-tok", "--hyp-txt"):
        p.add_argument(option, required=True)
    p.add_argument("command", nargs=argparse.REMAINDER)
    p.set_defaults(run=translate)
    return ap


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "command", None) and args.command[0] == "--":
        args.command = args.command[1:]
    args.run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
