"""Binarize a segmented corpus with fairseq-preprocess, training data split into shards.

    binarize.py --source-lang de --target-lang en --srcdict D.de --tgtdict D.en \\
        --trainpref P --validpref V [--testpref T] --shards 8 --destdir DIR [--workers N]

Writes DIR/shard0 ... DIR/shard{N-1}.  Training line i goes to shard i mod N (so every shard
mixes all corpora); shard0 also holds the valid and test splits.  Every shard carries the two
dictionaries.  fairseq-train reads "DIR/shard0:DIR/shard1:..." as one shard per epoch, so an
epoch of the training data is N fairseq epochs, each ending in a checkpoint and a dev
evaluation: the study's "8 checkpoints per epoch" with the lr schedule (reduce_lr_on_plateau,
which fairseq steps once per fairseq epoch) counting dev evaluations, as in the study.

This runs fairseq-preprocess's own code (fairseq_cli.preprocess.main) once per shard inside
one Python process, to pay fairseq's start-up cost once.  DIR must not exist: a step hands the
tool a temporary name and renames it when it succeeded.
"""
import argparse
import logging
import os
import shutil
import sys
import tempfile


def split_round_robin(path, n, out_paths):
    outs = [open(p, "w", encoding="utf-8") for p in out_paths]
    try:
        with open(path, encoding="utf-8", newline="\n") as f:
            for i, line in enumerate(f):
                outs[i % n].write(line if line.endswith("\n") else line + "\n")
    finally:
        for o in outs:
            o.close()


def run_preprocess(argv):
    from fairseq import options
    from fairseq_cli import preprocess

    parser = options.get_preprocessing_parser()
    args = parser.parse_args(argv)
    root = logging.getLogger()
    before = list(root.handlers)
    try:
        preprocess.main(args)
    finally:  # preprocess.main adds a file handler per call
        for h in list(root.handlers):
            if h not in before:
                root.removeHandler(h)
                h.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source-lang", required=True)
    ap.add_argument("--target-lang", required=True)
    ap.add_argument("--srcdict", required=True)
    ap.add_argument("--tgtdict", required=True)
    ap.add_argument("--trainpref", required=True)
    ap.add_argument("--validpref")
    ap.add_argument("--testpref")
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--destdir", required=True)
    ap.add_argument("--workers", type=int, default=1)
    a = ap.parse_args(argv)
    if a.shards < 1:
        ap.error("--shards must be at least 1")

    src, tgt = a.source_lang, a.target_lang
    destdir = a.destdir.rstrip("/")
    os.makedirs(destdir)  # new: a step hands the tool a temporary name and renames it when it succeeded
    split_dir = tempfile.mkdtemp(prefix="shards.", dir=destdir)
    try:
        for lang in (src, tgt):
            split_round_robin(f"{a.trainpref}.{lang}", a.shards,
                              [os.path.join(split_dir, f"train{k}.{lang}") for k in range(a.shards)])
        for k in range(a.shards):
            argv = ["--source-lang", src, "--target-lang", tgt,
                    "--srcdict", a.srcdict, "--tgtdict", a.tgtdict,
                    "--trainpref", os.path.join(split_dir, f"train{k}"),
                    "--destdir", os.path.join(destdir, f"shard{k}"),
                    "--workers", str(a.workers)]
            if k == 0:
                if a.validpref:
                    argv += ["--validpref", a.validpref]
                if a.testpref:
                    argv += ["--testpref", a.testpref]
            run_preprocess(argv)
    finally:
        shutil.rmtree(split_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
