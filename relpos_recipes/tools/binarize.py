"""Binarize segmented text into fairseq's data format: the files fairseq-preprocess writes with
dictionaries given (``--srcdict``/``--tgtdict``), byte for byte, without importing torch or
fairseq (a process that does spends about 2 s of CPU on the imports alone, and a preparation
binarizes its training data and every test set).

    binarize.py --source-lang de --target-lang en --srcdict D.de --tgtdict D.en \\
        [--trainpref P [--shards 8]] [--validpref V] [--testpref T] --destdir DIR [--workers N]

With ``--trainpref``: DIR/shard0 ... DIR/shard{N-1}.  Training line i goes to shard i mod N
(so every shard mixes all corpora); shard0 also holds the valid and test splits.  Every shard
carries the two dictionaries.  fairseq-train reads "DIR/shard0:DIR/shard1:..." as one shard
per epoch, so an epoch of the training data is N fairseq epochs, each ending in a checkpoint
and a dev evaluation: the study's "8 checkpoints per epoch" with the lr schedule
(reduce_lr_on_plateau, which fairseq steps once per fairseq epoch) counting dev evaluations,
as in the study.  Without it (a test set): the splits and dictionaries in DIR itself, as
``fairseq-preprocess --destdir DIR`` lays them out.

What fairseq-preprocess (fairseq 0.12.2) does, and so this tool: a dictionary file is read as
``Dictionary.load`` reads it (``WORD COUNT`` lines, ``#fairseq:overwrite`` flags, the four
special symbols first) and saved as ``Dictionary.save`` writes it; a line is split on
whitespace runs, each word is its index or ``<unk>``'s, then ``</s>``; the tokens are stored
as uint16 below 65,500 dictionary entries (uint32, int64 above) in SPLIT.SRC-TGT.LANG.bin,
with the MMIDIDX index (sizes, byte offsets) in .idx; the log says per file its sentences,
tokens and the share replaced by ``<unk>``, in fairseq's words.  tests/recipes/
test_binarize.py compares every file with fairseq-preprocess's on real text.  DIR must not
exist: a step hands the tool a temporary name and renames it when it succeeded.
"""
import argparse
import os
import shutil
import struct
import sys
import tempfile
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import List, Optional, Tuple

import numpy as np

from . import fail

SPECIAL_SYMBOLS = ("<s>", "<pad>", "</s>", "<unk>")  # fairseq's Dictionary: bos, pad, eos, unk
SPECIALS = len(SPECIAL_SYMBOLS)  # no line of a dictionary file
OVERWRITE_FLAG = "#fairseq:overwrite"
INDEX_MAGIC = b"MMIDIDX\x00\x00"  # fairseq's MMapIndexedDataset.Index, version 1
DTYPE_CODES = {np.uint16: 8, np.uint32: 9, np.int64: 5}
LINES_PER_BLOCK = 50_000  # read, encoded (by the workers) and written a block at a time


class Vocabulary:
    """A fairseq dictionary file as fairseq reads it: its words' indices follow the four
    special symbols; a word flagged ``#fairseq:overwrite`` takes a new index."""

    def __init__(self, path: Optional[str] = None):
        """The dictionary file ``path``; without it, the special symbols alone."""
        self.symbols: List[str] = list(SPECIAL_SYMBOLS)
        self.counts: List[int] = [1] * SPECIALS
        self.indices = {word: i for i, word in enumerate(SPECIAL_SYMBOLS)}
        self.eos, self.unk = self.indices["</s>"], self.indices["<unk>"]
        if path is not None:
            self._load(path)

    def _load(self, path: str) -> None:
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.readlines()
        except OSError as e:
            fail(f"cannot read the dictionary {path}: {e.strerror}")
        except UnicodeDecodeError:
            fail(f"the dictionary {path} is not UTF-8 text")
        for number, line in enumerate(lines, 1):
            try:  # Dictionary.add_from_file's parsing
                word, count = line.rstrip().rsplit(" ", 1)
                overwrite = count == OVERWRITE_FLAG
                if overwrite:
                    word, count = word.rsplit(" ", 1)
                count = int(count)
            except ValueError:
                fail(f"{path}, line {number}: {line.rstrip()!r} is not a dictionary entry (expected 'WORD COUNT', "
                     f"optionally followed by {OVERWRITE_FLAG})")
            if word in self.indices and not overwrite:
                fail(f"{path}, line {number}: {word!r} is in the dictionary already (fairseq refuses a word twice "
                     f"unless its line ends in {OVERWRITE_FLAG})")
            self.indices[word] = len(self.symbols)
            self.symbols.append(word)
            self.counts.append(count)

    def __len__(self) -> int:
        return len(self.symbols)

    def add(self, word: str, count: int) -> None:
        """Dictionary.add_symbol: a word seen before adds to its count."""
        if word in self.indices:
            self.counts[self.indices[word]] += count
        else:
            self.indices[word] = len(self.symbols)
            self.symbols.append(word)
            self.counts.append(count)

    @classmethod
    def counted(cls, counts: Counter, padding_factor: int = 8) -> "Vocabulary":
        """What fairseq-preprocess builds from a text's word counts (its </s> per line among
        them): the words by count, the most frequent first, ties in code point order (threshold
        0, no limit on the number of words), then madeupwordNNNN to a multiple of eight."""
        vocabulary = cls()
        ordinary = {word: count for word, count in sorted(counts.items()) if word not in vocabulary.indices}
        for word, count in Counter(ordinary).most_common():  # stable: ties keep the sorted order
            vocabulary.add(word, count)
        number = 0
        while len(vocabulary) % padding_factor:
            vocabulary.add(f"madeupword{number:04d}", 0)
            number += 1
        return vocabulary

    def save(self, path: str) -> None:
        """As fairseq's Dictionary.save: every entry but the special symbols, without flags."""
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(f"{word} {count}\n" for word, count in zip(self.symbols[SPECIALS:], self.counts[SPECIALS:]))

    def token_dtype(self):
        """fairseq's best_fitting_int_dtype(len(dictionary))."""
        return np.uint16 if len(self) < 65500 else np.uint32 if len(self) < 4294967295 else np.int64


@dataclass
class Summary:
    """fairseq's BinarizeSummary: sentences, tokens (``</s>`` included) and the words that
    became ``<unk>``; ``replaced`` stays None for a file without lines."""
    sentences: int = 0
    tokens: int = 0
    replaced: Optional[Counter] = None

    def add(self, other: "Summary") -> None:
        self.sentences += other.sentences
        self.tokens += other.tokens
        if other.replaced is not None:
            self.replaced = other.replaced if self.replaced is None else self.replaced + other.replaced

    def __str__(self) -> str:  # fairseq's words
        said = f"{self.sentences} sents, {self.tokens} tokens"
        if self.replaced is None:
            return said
        return f"{said}, {100 * sum(self.replaced.values()) / self.tokens:.3}% replaced"


@dataclass
class EncodedBlock:
    tokens: np.ndarray  # the lines' token ids, one after the other
    sizes: List[int]  # each line's number of tokens
    summary: Summary


def encode_lines(lines: List[str], vocabulary: Vocabulary) -> EncodedBlock:
    """Each line's word indices and ``</s>``, as fairseq's encode_line with add_if_not_exist off."""
    indices, unk, eos, unk_word = vocabulary.indices, vocabulary.unk, vocabulary.eos, "<unk>"
    ids: List[int] = []
    sizes: List[int] = []
    replaced: Counter = Counter()
    for line in lines:
        # fairseq's tokenize_line (runs of \s to one space, stripped, split on spaces): the
        # same words as str.split, whose whitespace is re's \s at every code point
        words = line.split()
        for word in words:
            index = indices.get(word, unk)
            if index == unk and word != unk_word:
                replaced[word] += 1
            ids.append(index)
        ids.append(eos)
        sizes.append(len(words) + 1)
    summary = Summary(len(sizes), len(ids), replaced if lines else None)
    return EncodedBlock(np.array(ids, dtype=vocabulary.token_dtype()), sizes, summary)


def _blocks(path: str, lines_per_block: int):
    """The file's lines (universal newlines, as fairseq reads them), a block at a time."""
    try:
        with open(path, encoding="utf-8") as f:
            while True:
                block = list(islice(f, lines_per_block))
                if not block:
                    return
                yield block
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    except UnicodeDecodeError as e:
        fail(f"{path} is not UTF-8 text (byte {e.start} of a line: {e.reason})")


def count_words(lines: List[str]) -> Counter:
    """Each word of the lines (as encode_lines splits them), and a </s> per line
    (Dictionary.add_file_to_dictionary)."""
    counts: Counter = Counter()
    for line in lines:
        counts.update(line.split())
    counts["</s>"] += len(lines)
    return counts


def _split(block: List[str], parts: int) -> List[List[str]]:
    size = -(-len(block) // parts)
    return [block[i:i + size] for i in range(0, len(block), size)]


def _by_block(function, source: str, workers: int):
    """``function`` of the file's lines, a block at a time, in order: here for a block of one
    worker's share (a test set's whole file), by ``workers`` processes for a larger one."""
    pool = None
    try:
        for block in _blocks(source, LINES_PER_BLOCK * workers):
            if workers == 1 or len(block) <= LINES_PER_BLOCK:
                yield function(block)
            else:
                pool = pool or ProcessPoolExecutor(workers)
                yield from pool.map(function, _split(block, workers))
    finally:
        if pool:
            pool.shutdown()


def binarize_file(vocabulary: Vocabulary, source: str, out_prefix: str, workers: int = 1) -> Summary:
    """``source`` into ``out_prefix``.bin and .idx (fairseq's mmap format)."""
    dtype = vocabulary.token_dtype()
    summary, sizes = Summary(), []
    with open(f"{out_prefix}.bin", "wb") as data:
        for part in _by_block(partial(encode_lines, vocabulary=vocabulary), source, workers):
            data.write(part.tokens.tobytes(order="C"))
            sizes += part.sizes
            summary.add(part.summary)
    pointers = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(np.asarray(sizes[:-1], dtype=np.int64) * np.dtype(dtype).itemsize, out=pointers[1:])
    with open(f"{out_prefix}.idx", "wb") as index:
        index.write(INDEX_MAGIC + struct.pack("<Q", 1) + struct.pack("<B", DTYPE_CODES[dtype]))
        index.write(struct.pack("<Q", len(sizes)))
        index.write(np.asarray(sizes, dtype=np.int32).tobytes(order="C"))
        index.write(pointers.tobytes(order="C"))
    return summary


def build_dictionary(source: str, workers: int = 1) -> Vocabulary:
    """fairseq-preprocess's dictionary of ``source`` (its defaults: every word, padded to a
    multiple of eight)."""
    counts: Counter = Counter()
    for part in _by_block(count_words, source, workers):
        counts.update(part)
    return Vocabulary.counted(counts)


def binarize_splits(langs: Tuple[str, str], vocabularies: Tuple[Vocabulary, Vocabulary],
                    splits: List[Tuple[str, str]], destdir: str, workers: int = 1) -> None:
    """What ``fairseq-preprocess --srcdict --tgtdict`` makes of ``splits`` ((name, prefix) in
    fairseq's order: train, valid, test): DESTDIR/dict.LANG.txt and NAME.SRC-TGT.LANG.bin/.idx,
    and preprocess.log with what it said."""
    os.makedirs(destdir, exist_ok=True)
    said = []
    for lang, vocabulary in zip(langs, vocabularies):
        vocabulary.save(os.path.join(destdir, f"dict.{lang}.txt"))
    for lang, vocabulary in zip(langs, vocabularies):
        for name, prefix in splits:
            said.append(f"[{lang}] Dictionary: {len(vocabulary)} types")
            source = f"{prefix}.{lang}"
            summary = binarize_file(vocabulary, source, os.path.join(destdir, f"{name}.{langs[0]}-{langs[1]}.{lang}"),
                                    workers)
            said.append(f"[{lang}] {source}: {summary} (by <unk>)")
    said.append(f"Wrote preprocessed data to {destdir}")
    _say(said, destdir)


def split_round_robin(path, n, out_paths):
    outs = [open(p, "w", encoding="utf-8") for p in out_paths]
    try:
        with open(path, encoding="utf-8", newline="\n") as f:
            for i, line in enumerate(f):
                outs[i % n].write(line if line.endswith("\n") else line + "\n")
    finally:
        for o in outs:
            o.close()


def write_dictionaries(langs: Tuple[str, str], trainpref: str, destdir: str, workers: int) -> None:
    """``fairseq-preprocess --dict-only``: DESTDIR/dict.LANG.txt of each side of TRAINPREF."""
    said = []
    for lang in langs:
        vocabulary = build_dictionary(f"{trainpref}.{lang}", workers)
        vocabulary.save(os.path.join(destdir, f"dict.{lang}.txt"))
        said.append(f"[{lang}] {trainpref}.{lang}: a dictionary of {len(vocabulary)} types")
    _say(said, destdir)


def _say(said: List[str], destdir: str) -> None:
    """On stderr, and in DESTDIR/preprocess.log as fairseq-preprocess keeps it."""
    for line in said:
        print(line, file=sys.stderr)
    with open(os.path.join(destdir, "preprocess.log"), "w", encoding="utf-8") as f:
        f.writelines(f"{line}\n" for line in said)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source-lang", required=True)
    ap.add_argument("--target-lang", required=True)
    ap.add_argument("--srcdict", help="the source dictionary (all but --dict-only)")
    ap.add_argument("--tgtdict", help="the target dictionary (all but --dict-only)")
    ap.add_argument("--trainpref", help="the training data, in --shards shards")
    ap.add_argument("--validpref")
    ap.add_argument("--testpref")
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--dict-only", action="store_true",
                    help="only the dictionaries of --trainpref's two sides, in --destdir")
    ap.add_argument("--destdir", required=True)
    ap.add_argument("--workers", type=int, default=1)
    a = ap.parse_args(argv)
    if a.shards < 1:
        ap.error("--shards must be at least 1")
    if a.workers < 1:
        ap.error("--workers must be at least 1")
    if a.dict_only and (not a.trainpref or a.validpref or a.testpref or a.srcdict or a.tgtdict):
        ap.error("--dict-only takes --trainpref alone (no dictionaries, no other splits)")
    if not a.dict_only and not (a.srcdict and a.tgtdict):
        ap.error("--srcdict and --tgtdict are needed (or --dict-only, to make them)")
    if not (a.trainpref or a.validpref or a.testpref):
        ap.error("nothing to binarize: give --trainpref, --validpref or --testpref")

    langs = (a.source_lang, a.target_lang)
    vocabularies = None if a.dict_only else (Vocabulary(a.srcdict), Vocabulary(a.tgtdict))
    for prefix in (a.trainpref, a.validpref, a.testpref):
        for lang in langs if prefix else ():
            if not os.path.isfile(f"{prefix}.{lang}"):
                fail(f"{prefix}.{lang} is missing (the {lang} side of {prefix})")
    held_out = [(name, prefix) for name, prefix in (("valid", a.validpref), ("test", a.testpref)) if prefix]
    destdir = a.destdir.rstrip("/")
    os.makedirs(destdir)  # new: a step hands the tool a temporary name and renames it when it succeeded
    if a.dict_only:
        write_dictionaries(langs, a.trainpref, destdir, a.workers)
    elif not a.trainpref:
        binarize_splits(langs, vocabularies, held_out, destdir, a.workers)
    else:
        split_dir = tempfile.mkdtemp(prefix="shards.", dir=destdir)
        try:
            for lang in langs:
                split_round_robin(f"{a.trainpref}.{lang}", a.shards,
                                  [os.path.join(split_dir, f"train{k}.{lang}") for k in range(a.shards)])
            for k in range(a.shards):
                splits = [("train", os.path.join(split_dir, f"train{k}"))] + (held_out if k == 0 else [])
                binarize_splits(langs, vocabularies, splits, os.path.join(destdir, f"shard{k}"), a.workers)
        finally:
            shutil.rmtree(split_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
