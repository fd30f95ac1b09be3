"""Filter a line-parallel corpus by the lengths of both sides; print what was kept and removed.

    filter_pairs.py --src train.de --tgt train.en --out-src out.de --out-tgt out.en \\
        [--max-len 100] [--min-len 1] [--max-ratio 9] [--src-unit word|char] \\
        [--tgt-unit word|char] [--band LO:HI [--band-side longer|source|target]] \\
        [--label NAME] [--report filter.txt]

A pair is removed when the source OR the target is longer than --max-len, shorter than
--min-len, or when the longer side is more than --max-ratio times the shorter one (Moses'
clean-corpus-n rule), or, with --band, when its length is outside LO..HI (both included):
the length of its longer side (the default), its source or its target, so that a length
band is the same range of lengths the reports bucket by.  A band that keeps no pair is an
error (fairseq cannot train or validate on nothing).  Lengths are whitespace-separated tokens ("word": on subworded text,
subword tokens) or characters without spaces ("char", for unsegmented Chinese).  The summary
line goes to stdout and, with --report, to a file; outputs are written under temporary names
and renamed when complete.
"""
import argparse
import json
import sys

from relpos_analysis.buckets import band_spec, parse_band
from relpos_analysis.io import InputError

BAND_SIDES = ("longer", "source", "target")


def band_length(ls: int, lt: int, side: str) -> int:
    """The length a band is on: the longer side's, the source's or the target's."""
    return {"longer": max(ls, lt), "source": ls, "target": lt}[side]


def length(line, unit):
    if unit == "char":
        return len("".join(line.split()))
    return len(line.split())


def keep_pair(ls, lt, a):
    if a.min_len is not None and (ls < a.min_len or lt < a.min_len):
        return False
    if a.max_len is not None and (ls > a.max_len or lt > a.max_len):
        return False
    if a.max_ratio is not None and ls > 0 and lt > 0:
        if ls / lt > a.max_ratio or lt / ls > a.max_ratio:
            return False
    if a.band is not None and not a.band.contains(band_length(ls, lt, a.band_side)):
        return False
    return True


def _band(text: str):
    try:
        return parse_band(text)
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True)
    ap.add_argument("--tgt", required=True)
    ap.add_argument("--out-src", required=True)
    ap.add_argument("--out-tgt", required=True)
    ap.add_argument("--max-len", type=int)
    ap.add_argument("--min-len", type=int)
    ap.add_argument("--max-ratio", type=float)
    ap.add_argument("--src-unit", choices=["word", "char"], default="word")
    ap.add_argument("--tgt-unit", choices=["word", "char"], default="word")
    ap.add_argument("--band", type=_band, help="keep the pairs of lengths LO:HI (both included)")
    ap.add_argument("--band-side", choices=BAND_SIDES, default="longer", help="what --band measures")
    ap.add_argument("--label", default="filter")
    ap.add_argument("--report", help="also write the summary here (and NAME.json)")
    a = ap.parse_args(argv)

    total = kept = 0
    shortest, longest = float("inf"), 0  # on the band's side, for a band that keeps nothing
    with open(a.src, encoding="utf-8", newline="\n") as fs, \
            open(a.tgt, encoding="utf-8", newline="\n") as ft, \
            open(a.out_src, "w", encoding="utf-8") as os_, \
            open(a.out_tgt, "w", encoding="utf-8") as ot:
        for s in fs:
            t = ft.readline()
            if not t:
                raise SystemExit(f"error: {a.tgt} has fewer lines than {a.src}")
            total += 1
            ls, lt = length(s, a.src_unit), length(t, a.tgt_unit)
            if a.band is not None:
                shortest = min(shortest, band_length(ls, lt, a.band_side))
                longest = max(longest, band_length(ls, lt, a.band_side))
            if keep_pair(ls, lt, a):
                os_.write(s if s.endswith("\n") else s + "\n")
                ot.write(t if t.endswith("\n") else t + "\n")
                kept += 1
        if ft.readline():
            raise SystemExit(f"error: {a.tgt} has more lines than {a.src}")

    if a.band is not None and kept == 0:
        seen = f"lengths {shortest} to {longest}" if total else "no pairs"
        raise SystemExit(f"error: no pair of {a.src} and {a.tgt} is in the length band {band_spec(a.band)} (length of the "
                         f"{a.band_side} side; the files have {seen}): choose bands within the corpus's lengths")
    removed = total - kept
    share = 100.0 * removed / total if total else 0.0
    rules = ", ".join(f"{k}={v}" for k, v in (("max_len", a.max_len), ("min_len", a.min_len),
                                                ("max_ratio", a.max_ratio),
                                                ("band", a.band and band_spec(a.band))) if v is not None)
    if a.band is not None:
        rules += f", band_side={a.band_side}"
    line = (f"{a.label}: kept {kept} of {total} pairs ({100.0 - share:.2f}%), "
            f"removed {removed} ({share:.2f}%) [{rules}]")
    print(line)
    if a.report:
        with open(a.report, "w", encoding="utf-8") as f:
            f.write(line + "\n")
        stats = {"label": a.label, "total": total, "kept": kept, "removed": removed,
                 "removed_percent": round(share, 4), "max_len": a.max_len,
                 "min_len": a.min_len, "max_ratio": a.max_ratio}
        if a.band is not None:
            stats.update(band=band_spec(a.band), band_side=a.band_side)
        base = a.report[:-4] if a.report.endswith(".txt") else a.report
        with open(base + ".json", "w", encoding="utf-8") as f:
            json.dump(stats, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
