"""Concatenation augmentation, the data-side remedy a position scheme is to be compared with:
training pairs joined two at a time and added to the training set, up to the length limit.

    python -m relpos_recipes.tools.concat_augment --src lenN/train.de --tgt lenN/train.en \\
        --max-len N --share 1 --seed 1 --out-src OUT.de --out-tgt OUT.en [--report concat.txt]

Kondo et al. (2021) join random training pairs into longer ones; Nguyen et al. (2021) join
each training pair with another drawn at random and train on the original pairs plus the
joined ones (about +1 BLEU on four low-resource pairs, which they trace to the variety of
lengths and to sentences that no longer always start at the first position).  Here a joined
pair must fit the length limit, so that a system trained on it sees no longer sentence than
its baseline; what it gains is that variety and that shift within the limit.  The rule:

1. the training pairs are put in a random order (from ``--seed``), and the first
   ``--share`` of them (default 1: every pair) are each offered a partner;
2. a partner is drawn uniformly among the other training pairs, up to TRIES draws; the first
   with which both joined sides (the offered pair's side, a space, the partner's side: as
   concat_seq joins test pairs, relpos_recipes.tools.text.joined) have at most ``--max-len``
   tokens is taken, and if none fits the pair is not joined;
3. the output is the training pairs in their order, then the joined pairs in the order they
   were made.

Lengths are whitespace tokens (subwords, on segmented text).  The draws use
``random.Random.random()`` alone, whose sequence Python keeps across versions, so a seed
gives the same pairs everywhere.  The summary line (pairs, joined pairs, their share) goes
to stdout and, with --report, to a file and NAME.json.
"""
import argparse
import json
import random
import sys
from typing import List, Sequence, Tuple

from . import fail
from .text import joined

TRIES = 10  # partners drawn for a pair before it is left unjoined


def join_pairs(src_lengths: Sequence[int], tgt_lengths: Sequence[int], max_len: int, share: float,
               seed: int, tries: int = TRIES) -> List[Tuple[int, int]]:
    """The joined pairs the rule makes (see the module's docstring), as (offered pair,
    partner) indices into the training pairs."""
    n = len(src_lengths)
    if n < 2:
        return []
    rng = random.Random(seed)
    order = list(range(n))
    for k in range(n - 1, 0, -1):  # Fisher-Yates, from random() alone
        j = int(rng.random() * (k + 1))
        order[k], order[j] = order[j], order[k]
    made = []
    for first in order[:round(share * n)]:
        for _ in range(tries):
            partner = int(rng.random() * (n - 1))
            partner += partner >= first  # any pair but the offered one
            if src_lengths[first] + src_lengths[partner] <= max_len and \
                    tgt_lengths[first] + tgt_lengths[partner] <= max_len:
                made.append((first, partner))
                break
    return made


def read_lines(path: str) -> List[str]:
    with open(path, encoding="utf-8", newline="\n") as f:
        return f.read().splitlines()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m relpos_recipes.tools.concat_augment",
                                 description=__doc__.split("\n\n")[0])
    for option in ("--src", "--tgt", "--out-src", "--out-tgt"):
        ap.add_argument(option, required=True)
    ap.add_argument("--max-len", type=int, required=True, help="longest joined side, in tokens")
    ap.add_argument("--share", type=float, default=1.0, help="share of the training pairs offered a partner")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--report", help="also write the summary here (and NAME.json)")
    a = ap.parse_args(argv)
    if not 0 < a.share <= 1:
        fail(f"--share is a share of the training pairs, above 0 and at most 1, got {a.share:g}")
    src, tgt = read_lines(a.src), read_lines(a.tgt)
    if len(src) != len(tgt):
        fail(f"{a.src} has {len(src)} lines but {a.tgt} has {len(tgt)}: expected one line per pair on both sides")
    made = join_pairs([len(s.split()) for s in src], [len(t.split()) for t in tgt], a.max_len, a.share, a.seed)
    for side, out in ((src, a.out_src), (tgt, a.out_tgt)):
        with open(out, "w", encoding="utf-8", newline="\n") as f:
            f.writelines(line + "\n" for line in side)
            f.writelines(joined((side[first], side[partner])) + "\n" for first, partner in made)
    offered = round(a.share * len(src)) if len(src) > 1 else 0
    line = (f"concatenation augmentation: {len(src)} training pairs, {len(made)} joined pairs within {a.max_len} "
            f"tokens added ({100.0 * len(made) / max(len(src), 1):.2f}% of the training pairs; {offered} offered "
            f"a partner) [share={a.share:g}, seed={a.seed}, tries={TRIES}]")
    print(line)
    if a.report:
        with open(a.report, "w", encoding="utf-8") as f:
            f.write(line + "\n")
        stats = {"label": "concatenation augmentation", "pairs": len(src), "offered": offered, "joined": len(made),
                 "max_len": a.max_len, "share": a.share, "seed": a.seed, "tries": TRIES}
        with open(a.report.removesuffix(".txt") + ".json", "w", encoding="utf-8") as f:
            json.dump(stats, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
