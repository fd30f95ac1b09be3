"""fairseq-generate as a step: ``python -m relpos_recipes.tools.fairseq_generate``

``translate --testset DIR --log generate.log --hyp-seg hyp.seg --hyp-tok hyp.tok --hyp-txt
hyp.txt -- fairseq-generate ...`` translates a test set of build-test-sets.sh, then writes each
sentence's best hypothesis in source order (hyp.seg), the segmentation undone (hyp.tok) and
the tokenisation undone (hyp.txt).  Every sentence gets its translation, or the step fails: a
source the model cannot take is an error, never an empty hypothesis.

``scores --testset DIR --log generate.log --out hyp.scores`` writes each best hypothesis's mean
log2-probability per output token, its end of sentence included
(relpos_analysis.io.fairseq_log_probs: the mean of fairseq's P- line, which is its H- score at
the default --lenpen 1, whatever --lenpen the decoding used), one per line in source order:
what ``relpos-report --system-scores`` and ``relpos-leaderboard --system-scores`` read.  A step
of its own, after the translation: the translations made before it existed stay done.
"""
import argparse
import subprocess
import sys
from pathlib import Path
from typing import List

from relpos_analysis import fairseq_log
from relpos_analysis.io import InputError, fairseq_log_probs, fairseq_segments, read_lines

from . import fail, option_value
from .fairseq_train import check_checkpoint
from .text import deseg_file, detok_file


def read_env(path: Path) -> dict:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        fail(f"{path} is missing")
    return dict(line.split("=", 1) for line in lines if "=" in line)


def write_hypotheses(log: Path, n_sentences: int, out: Path) -> None:
    """Line <id> of OUT is the best hypothesis of sentence <id> (its first "H-<id>" line:
    with --nbest fairseq prints the best first), for every id 0..N-1.  A sentence without a
    hypothesis (one that fairseq skipped, e.g. with --skip-invalid-size-inputs-valid-test) or
    an id beyond the N source lines is an error: an empty line in its place would be scored
    as a translation."""
    try:
        hypotheses = fairseq_segments(read_lines(str(log), "--log"), "H", str(log), n_sentences=n_sentences)
    except InputError as err:
        fail(str(err))
    Path(out).write_text("".join(hyp + "\n" for hyp in hypotheses), encoding="utf-8", newline="\n")


def write_scores(log: Path, n_sentences: int, out: Path) -> None:
    """Line <id> of OUT is the mean log2-probability per token of sentence <id>'s best
    hypothesis (fairseq_log_probs), for every id 0..N-1, checked as write_hypotheses checks."""
    try:
        scores = fairseq_log_probs(read_lines(str(log), "--log"), str(log), n_sentences=n_sentences)
    except InputError as err:
        fail(str(err))
    Path(out).write_text("".join(f"{score:.6f}\n" for score in scores), encoding="utf-8", newline="\n")


def translate(a) -> None:
    testset = Path(a.testset)
    meta = read_env(testset / "meta.env")
    work = testset.parent.parent
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
        too_long = fairseq_log.too_long(tail)
        if too_long:
            fail(f"{checkpoint} cannot translate {testset}: {too_long}. Translate a test set of shorter sentences, "
                 "or use a model with more positions (the hypothesis of a sentence that was not translated is "
                 "never left empty)")
        fail(f"fairseq-generate failed (exit {code}): {fairseq_log.last_error(tail) or 'see the lines above'}")
    write_hypotheses(Path(a.log), int(meta["LINES"]), Path(a.hyp_seg))
    tgt = prep["TGT"]
    deseg_file(prep["SEG"], str(work / "seg" / f"spm.{tgt}.model"), a.hyp_seg, a.hyp_tok)
    detok_file(prep["TEXTPROC"], tgt, a.hyp_tok, a.hyp_txt)
    with open(a.log, encoding="utf-8", errors="replace") as log:
        for line in log:
            if line.startswith("Generate test with beam"):
                print(line.rstrip("\n"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m relpos_recipes.tools.fairseq_generate",
                                 description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="tool", required=True)
    p = sub.add_parser("translate")
    p.add_argument("--testset", required=True)
    for option in ("--log", "--hyp-seg", "--hyp-tok", "--hyp-txt"):
        p.add_argument(option, required=True)
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- fairseq-generate ...")
    p = sub.add_parser("scores")
    p.add_argument("--testset", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    if a.tool == "scores":
        write_scores(Path(a.log), int(read_env(Path(a.testset) / "meta.env")["LINES"]), Path(a.out))
        return 0
    a.command = a.command[1:] if a.command[:1] == ["--"] else a.command
    translate(a)
    return 0

if __name__ == "__main__":
    sys.exit(main())
