#!/usr/bin/env python3
"""Turn fairseq-generate's log into hypotheses in source order.

    gen_output.py --log generate.log --n 28075 --out hyp.seg

Line <id> of OUT is the best hypothesis of sentence <id> (its first "H-<id>" line: with
--nbest fairseq prints the best first), for every id 0..N-1, read by the length report's
own reader (analysis.io.fairseq_segments).  A sentence without a hypothesis (one that
fairseq skipped, e.g. with --skip-invalid-size-inputs-valid-test) or an id beyond the N
source lines is an error: an empty line in its place would be scored as a translation.
OUT is written under a temporary name first.
"""
import argparse
import sys
from pathlib import Path

from analysis.io import InputError, fairseq_segments, read_lines, write_files


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", required=True)
    ap.add_argument("--n", type=int, required=True, help="number of source lines")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    try:
        hypotheses = fairseq_segments(read_lines(a.log, "--log"), "H", a.log, n_sentences=a.n)
        write_files({Path(a.out): "".join(hyp + "\n" for hyp in hypotheses).encode("utf-8")})
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
