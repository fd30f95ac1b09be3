"""Text tools of the recipes' steps: normalising and tokenising (sacremoses), joining and
cutting lines, the longer side of each pair, undoing the segmentation and the tokenisation
of hypotheses.  ``python -m relpos_recipes.tools.text SUBCOMMAND ...``.
"""
import argparse
import re
import shutil
import subprocess
import sys
from typing import List, Sequence

from . import count_lines, fail, run_parsed

# parallel start-up of sacremoses and subword-nmt only pays off on large inputs
PARALLEL_FROM_LINES = 200_000


def workers_for(lines: int, threads: int) -> int:
    return threads if lines > PARALLEL_FROM_LINES else 1


def sacremoses(lang: str, jobs: int, *commands: str) -> List[str]:
    return ["sacremoses", "-q", "-l", lang, "-j", str(jobs), *commands]


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


def joined(sentences: Sequence[str]) -> str:
    """Sentences joined into one, by a space: how concat_seq joins test pairs and the
    concatenation augmentation training pairs (relpos_recipes.tools.concat_augment), each
    side with its own side."""
    return " ".join(sentences)


def concat_lines(a) -> None:
    """Every N lines (1..N, N+1..2N, ...) joined (``joined``); a shorter last group stays."""
    with open(a.input, encoding="utf-8", newline="\n") as f:
        rows = f.read().split("\n")
    if rows and rows[-1] == "":
        rows.pop()
    with open(a.out, "w", encoding="utf-8", newline="\n") as out:
        for start in range(0, len(rows), a.n):
            out.write(joined(rows[start:start + a.n]) + "\n")


def longer_side(a) -> None:
    """The longer of each pair's segmented sides, whose token count is the pair's length in
    the reports: the training filter drops a pair by either side."""
    with open(a.src, encoding="utf-8", newline="\n") as s, open(a.tgt, encoding="utf-8", newline="\n") as t, \
            open(a.out, "w", encoding="utf-8", newline="\n") as out:
        for source, target in zip(s, t):
            source, target = source.rstrip("\n"), target.rstrip("\n")
            out.write((source if len(source.split()) >= len(target.split()) else target) + "\n")


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


def deseg_file(seg: str, spm_model: str, source: str, out: str) -> None:
    if seg == "bpe":
        joiner = re.compile(r"(@@ )|(@@ ?$)")
        with open(source, encoding="utf-8", newline="\n") as f, open(out, "w", encoding="utf-8", newline="\n") as o:
            for line in f:
                o.write(joiner.sub("", line.rstrip("\n")) + "\n")
    elif seg == "spm":
        from .spm import decode_file  # sentencepiece only where it segments

        decode_file(spm_model, source, out)
    elif seg == "none":
        shutil.copyfile(source, out)
    else:
        fail(f"unknown segmentation {seg!r} (bpe, spm or none)")


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




def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m relpos_recipes.tools.text", description=__doc__.split("\n\n")[0])
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
    return ap


def main(argv=None) -> int:
    return run_parsed(parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
