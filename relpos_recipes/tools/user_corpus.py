"""A parallel corpus the user brings (scripts/prepare-corpus.sh): its files checked line by
line, and taken into a prepared folder, with a dev set held out of the training pairs where
the user gives none.

    python -m relpos_recipes.tools.user_corpus check --src PREFIX.de --tgt PREFIX.en
    python -m relpos_recipes.tools.user_corpus take --src PREFIX.de --tgt PREFIX.en \\
        --out-src OUT.de --out-tgt OUT.en \\
        [--hold-out N --max-len L --src-unit word|char --tgt-unit word|char --seed S \\
         --dev-src DEV.de --dev-tgt DEV.en]

The check reads every line of both files before anything is written: each line must be UTF-8
text, hold a sentence (not empty, not only spaces) and no line break inside it (a \\r that
does not end a CRLF line, \\v, \\f, U+0085, U+2028, ...: every character on which Python's
str.splitlines() ends a line, which a later line-based tool would split the pair on), and
the two files must have as many lines.  A refusal names the file and the line.  A UTF-8
byte-order mark at the start of a file is dropped and CRLF line ends are read as line ends,
as the Tatoeba export's check (relpos_recipes.tools.tatoeba) does with the same rules.

``take`` writes the checked lines as plain UTF-8 with \\n line ends.  With ``--hold-out N``
it draws N pairs at random (from ``--seed``) among those whose both sides have at most
``--max-len`` words (characters for a side counted in ``char``) as the dev set, and the
other pairs, in the file's order, as the training set.  The draws use
``random.Random.random()`` alone, whose sequence Python keeps across versions.
"""
import argparse
import codecs
import dataclasses
import random
import sys
from typing import Dict, List, Sequence, Tuple

from . import fail
from .wmt_sources import LINE_BREAKS


class MalformedFile(ValueError):
    """A file that is not what a step expected: the message names it and the line."""


def checked_lines(data: bytes, name: str, expected: str, item: str = "sentence") -> List[str]:
    """The lines of a file's bytes ``data`` (cited as ``name``): a UTF-8 byte-order mark at
    the start dropped, \\n or \\r\\n line ends.  A line that is not UTF-8 or holds a line
    break, or a file without lines, raises MalformedFile naming it; ``expected`` says what
    the file should hold, ``item`` what one line is."""
    rows = data.removeprefix(codecs.BOM_UTF8).split(b"\n")
    if rows and rows[-1] == b"":
        rows.pop()  # the final newline
    if not rows:
        raise MalformedFile(f"{name}: empty file (expected {expected})")
    lines = []
    for number, raw in enumerate(rows, start=1):
        raw = raw.removesuffix(b"\r")
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise MalformedFile(f"{name} line {number}: byte {e.start + 1} is not UTF-8 "
                                f"({raw[e.start:e.start + 1]!r}); expected UTF-8 text") from None
        inner_break = LINE_BREAKS.search(line)
        if inner_break:
            raise MalformedFile(
                f"{name} line {number}: a line break {inner_break.group()!r} inside the line "
                f"(character {inner_break.start() + 1}); expected one {item} per line, each line "
                f"ending in \\n or \\r\\n: {line[:80]!r}")
        lines.append(line)
    return lines


def read_file(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise MalformedFile(f"{path}: no such file") from None
    except IsADirectoryError:
        raise MalformedFile(f"{path}: a folder, not a file of sentences") from None


def parallel_pairs(src: str, tgt: str) -> List[Tuple[str, str]]:
    """The pairs of two line-parallel files, each line checked (see the module's docstring)."""
    sides = []
    for path in (src, tgt):
        lines = checked_lines(read_file(path), path, "one sentence per line")
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                raise MalformedFile(f"{path} line {number}: empty; expected a sentence on every line "
                                    f"(both sides of every pair)")
        sides.append(lines)
    if len(sides[0]) != len(sides[1]):
        longer = src if len(sides[0]) > len(sides[1]) else tgt
        raise MalformedFile(f"{longer} line {min(map(len, sides)) + 1}: no partner on the other side ({src} has "
                            f"{len(sides[0])} lines, {tgt} {len(sides[1])}); expected one line per pair on both sides")
    return list(zip(*sides))


def length(sentence: str, unit: str) -> int:
    """Words (whitespace-separated) or characters other than whitespace, as the cleaning
    and the length filter count them (relpos_recipes.tools.filter_pairs)."""
    return len("".join(sentence.split())) if unit == "char" else len(sentence.split())


def hold_out(pairs: Sequence[Tuple[str, str]], n: int, max_len: int, units: Tuple[str, str],
             seed: int) -> List[int]:
    """The indices (in the file's order) of ``n`` pairs drawn at random from ``seed`` among
    those whose sides have at most ``max_len`` in their ``units``; the training set keeps
    at least as many pairs again."""
    within = [k for k, pair in enumerate(pairs)
              if all(length(side, unit) <= max_len for side, unit in zip(pair, units))]
    if len(within) < n or len(pairs) < 2 * n:
        raise MalformedFile(f"{len(pairs)} pairs, {len(within)} of them within {max_len}: too few to hold out "
                            f"{n} dev pairs within the limit and keep at least as many for training; give "
                            f"a dev set (--dev) or hold out fewer pairs (--dev-pairs)")
    rng = random.Random(seed)
    for k in range(n):  # the first n of a Fisher-Yates shuffle
        j = k + int(rng.random() * (len(within) - k))
        within[k], within[j] = within[j], within[k]
    return sorted(within[:n])


# a test set of which more than this share of pairs occurs in the training data is refused
# (prepare-corpus.sh --allow-overlap takes it): each memorised pair lifts the corpus score by
# about its share of what the model misses, so 1% of pairs moves BLEU at 30 by up to 0.7
# points, the size of the differences between position schemes that a board ranks
MAX_OVERLAP = 0.01


@dataclasses.dataclass(frozen=True)
class Overlap:
    """How many of a test set's pairs, and of its sources, occur in the training pairs."""

    pairs: int
    sources: int
    total: int

    @property
    def share(self) -> float:
        return self.pairs / self.total if self.total else 0.0

    def __str__(self) -> str:
        return (f"{self.pairs:,} of its {self.total:,} pairs ({self.share:.1%}) and {self.sources:,} of its sources "
                "occur in the training data")


def overlaps(train: Sequence[Tuple[str, str]], tests: Dict[str, Sequence[Tuple[str, str]]]) -> Dict[str, Overlap]:
    """Each test set's :class:`Overlap` with the training pairs ``train``; sentences are
    compared with their spaces normalised (the same sentence tokenised once more is the same)."""
    def same(sentence: str) -> str:
        return " ".join(sentence.split())

    pairs = {(same(src), same(tgt)) for src, tgt in train}
    sources = {src for src, _ in pairs}
    return {name: Overlap(pairs=sum((same(src), same(tgt)) in pairs for src, tgt in test),
                          sources=sum(same(src) in sources for src, _ in test), total=len(test))
            for name, test in tests.items()}


def write_side(path: str, sentences: Sequence[str]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        out.writelines(sentence + "\n" for sentence in sentences)


def take(a) -> None:
    pairs = parallel_pairs(a.src, a.tgt)
    dev = set(hold_out(pairs, a.hold_out, a.max_len, (a.src_unit, a.tgt_unit), a.seed)) if a.hold_out else set()
    train = [pair for k, pair in enumerate(pairs) if k not in dev]
    for side, path in enumerate((a.out_src, a.out_tgt)):
        write_side(path, [pair[side] for pair in train])
    if dev:
        for side, path in enumerate((a.dev_src, a.dev_tgt)):
            write_side(path, [pairs[k][side] for k in sorted(dev)])
        print(f"{a.src}: {len(pairs):,} pairs; {len(dev):,} held out as the dev set, {len(train):,} for training")
    else:
        print(f"{a.src}: {len(pairs):,} pairs")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m relpos_recipes.tools.user_corpus", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="tool", required=True)
    p = sub.add_parser("check", help="check both files; print the number of pairs")
    p.add_argument("--src", required=True)
    p.add_argument("--tgt", required=True)
    p = sub.add_parser("take", help="the checked pairs as plain text, a dev set held out of them or not")
    for option in ("--src", "--tgt", "--out-src", "--out-tgt"):
        p.add_argument(option, required=True)
    p.add_argument("--hold-out", type=int, default=0, metavar="N", help="dev pairs to hold out (0: none)")
    p.add_argument("--max-len", type=int, help="the held-out pairs' longest side")
    p.add_argument("--src-unit", choices=("word", "char"), default="word")
    p.add_argument("--tgt-unit", choices=("word", "char"), default="word")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dev-src")
    p.add_argument("--dev-tgt")
    return ap


def main(argv=None) -> int:
    a = parser().parse_args(argv)
    if a.tool == "take" and a.hold_out and not (a.max_len and a.dev_src and a.dev_tgt):
        fail("--hold-out needs --max-len, --dev-src and --dev-tgt")
    try:
        if a.tool == "check":
            print(f"{a.src}: {len(parallel_pairs(a.src, a.tgt)):,} pairs")
        else:
            take(a)
    except MalformedFile as e:
        fail(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
