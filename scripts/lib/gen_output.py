#!/usr/bin/env python3
"""Turn fairseq-generate's log into hypotheses in source order.

    gen_output.py --log generate.log --n 28075 --out hyp.seg

fairseq-generate prints "H-<id>\\t<score>\\t<tokens>" in batch order; this writes line <id>
of OUT for every id 0..N-1.  A sentence without a hypothesis (one that fairseq skipped, e.g.
with --skip-invalid-size-inputs-valid-test) is an error: an empty line in its place would be
scored as a translation.  Written under a temporary name first.
"""
import argparse
import os
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", required=True)
    ap.add_argument("--n", type=int, required=True, help="number of source lines")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)

    hyps = {}
    with open(a.log, encoding="utf-8", errors="replace", newline="\n") as f:
        for line in f:
            if line.startswith("H-"):
                head, _, rest = line.rstrip("\n").partition("\t")
                _score, _, text = rest.partition("\t")
                hyps[int(head[2:])] = text
    missing = [i for i in range(a.n) if i not in hyps]
    extra = [i for i in hyps if not 0 <= i < a.n]
    if extra:
        raise SystemExit(f"error: {a.log} has hypotheses for ids {extra[:5]}... beyond the "
                         f"{a.n} source lines")
    if missing:
        raise SystemExit(f"error: {a.log} has no hypothesis for {len(missing)} of {a.n} sentences "
                         f"(ids {missing[:10]}{'...' if len(missing) > 10 else ''}): fairseq "
                         "skipped them (sources longer than the model's maximum positions?)")
    tmp = f"{a.out}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as out:
        for i in range(a.n):
            out.write(hyps.get(i, "") + "\n")
    os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
