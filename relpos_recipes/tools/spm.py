"""SentencePiece through its Python API (the pip package ships no spm_train/spm_encode).

    spm.py train  --input FILE [FILE ...] --model-prefix PREFIX --vocab-size 32000
                  [--model-type unigram] [--character-coverage 1.0]
                  [--input-sentence-size 10000000] [--threads N]
    spm.py encode --model M.model --input IN --output OUT [--threads N]   (pieces)
    spm.py decode --model M.model --input IN --output OUT                 (pieces -> text)

Outputs are written where they are named (for train: PREFIX.model and PREFIX.vocab): a step
hands the tool temporary names and renames them when it succeeded.  Line counts are
preserved: an empty line stays an empty line.
"""
import argparse
import os
import re
import sys

import sentencepiece as spm

CHUNK = 100_000


def train(a):
    vocab_size = a.vocab_size
    while True:
        try:
            spm.SentencePieceTrainer.train(
                input=",".join(a.input),
                model_prefix=a.model_prefix,
                vocab_size=vocab_size,
                model_type=a.model_type,
                character_coverage=a.character_coverage,
                input_sentence_size=a.input_sentence_size,
                shuffle_input_sentence=True,
                num_threads=a.threads,
                hard_vocab_limit=not a.soft_vocab_limit,
                minloglevel=1,
            )
            break
        except RuntimeError as exc:
            # tiny data: more distinct characters than pieces asked for
            m = re.search(r"smaller than required_chars\. (\d+) vs (\d+)", str(exc))
            if not (a.soft_vocab_limit and m):
                raise
            vocab_size = int(m.group(2)) + 100
            print(f"spm.py: {a.vocab_size} pieces cannot cover the {m.group(2)} required "
                  f"characters of {a.input[0]}; using {vocab_size}", file=sys.stderr)


def _chunks(path):
    with open(path, encoding="utf-8", newline="\n") as f:
        buf = []
        for line in f:
            buf.append(line.rstrip("\n"))
            if len(buf) == CHUNK:
                yield buf
                buf = []
        if buf:
            yield buf


def encode(a):
    sp = spm.SentencePieceProcessor(model_file=a.model)
    with open(a.output, "w", encoding="utf-8") as out:
        for lines in _chunks(a.input):
            pieces = sp.encode(lines, out_type=str, num_threads=a.threads)
            out.writelines(" ".join(p) + "\n" for p in pieces)


def decode_file(model: str, source: str, output: str) -> None:
    sp = spm.SentencePieceProcessor(model_file=model)
    with open(output, "w", encoding="utf-8") as out:
        for lines in _chunks(source):
            out.writelines(sp.decode(line.split()) + "\n" for line in lines)


def decode(a):
    decode_file(a.model, a.input, a.output)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("train")
    p.add_argument("--input", nargs="+", required=True)
    p.add_argument("--model-prefix", required=True)
    p.add_argument("--vocab-size", type=int, default=32000)
    p.add_argument("--model-type", default="unigram")
    p.add_argument("--character-coverage", type=float, default=1.0)
    p.add_argument("--input-sentence-size", type=int, default=10_000_000)
    p.add_argument("--soft-vocab-limit", action="store_true",
                   help="allow fewer pieces than --vocab-size, or more when the data has more "
                        "distinct characters than that (tiny smoke-test data)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    for cmd in ("encode", "decode"):
        p = sub.add_parser(cmd)
        p.add_argument("--model", required=True)
        p.add_argument("--input", required=True)
        p.add_argument("--output", required=True)
        p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args(argv)
    {"train": train, "encode": encode, "decode": decode}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
