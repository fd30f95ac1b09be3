"""The Tatoeba German-English pairs (manythings.org/anki's deu-eng export) for the length study:
check the file, split it by sentence group, or download the current export.

    python tatoeba.py check --from FILE
    python tatoeba.py split --from FILE --out-dir DIR [--seed N] [--max-len N] ...
    python tatoeba.py download --out FILE

FILE is deu.txt (one pair per line, English<TAB>German, newer exports with a third,
attribution column, which is ignored) or the deu-eng.zip that holds it.  A UTF-8 byte-order
mark at the start of the file is dropped; a line break inside a line (a \r that does not end
a CRLF line, or \v, \f, U+0085, U+2028, ...: every character on which Python's
str.splitlines() ends a line) is refused with its line number, so that every later
line-based tool sees the lines that were checked.

The split keeps every sentence on one side: pairs are grouped by shared English *or* German
sentence (one English sentence often has several German translations, and a German one
several English), and each group goes whole to train, dev or test.  A group is "long" when
one of its pairs has a side of more than --max-len Moses tokens (the pipeline's tokenization:
sacremoses' punctuation normalization, then tokenization with aggressive dash splits).
Subword segmentation only splits tokens further, so the training length filter of the same
--max-len (on subword tokens) would drop every long pair: long groups all go to the test set,
with a random sample of the other (short) groups; dev is another random sample of short
groups, and the rest is training data.  The test set is shuffled (so that joining neighbours
mixes lengths); train and dev keep the file's order.  Every choice comes from --seed.
"""

import argparse
import hashlib
import json
import os
import random
import sys
import zipfile
from dataclasses import dataclass

from .wmt_sources import fetch, refusing_damaged_archive
from .user_corpus import MalformedFile, checked_lines

EXPORT_URL = "https://www.manythings.org/anki/deu-eng.zip"
MEMBER = "deu.txt"
ZIP_SIGNATURES = (b"PK\x03\x04", b"PK\x05\x06")  # a zip's first member; an empty zip
SPLITS = ("train", "dev", "test")


@dataclass(frozen=True)
class Pair:
    english: str
    german: str


def read_bytes(path):
    """(bytes of the pairs file, the name to cite in messages)."""
    if not os.path.isfile(path):
        raise MalformedFile(f"{path}: no such file (expected deu.txt or deu-eng.zip)")
    with open(path, "rb") as f:
        data = f.read()
    # by content, not by zipfile.is_zipfile, which calls a truncated zip no zip at all
    if not data.startswith(ZIP_SIGNATURES):
        if path.endswith(".zip"):
            raise MalformedFile(f"{path}: not a zip archive (it begins {data[:16]!r}); expected "
                                f"the zip archive as downloaded, or the {MEMBER} it holds")
        return data, path
    with refusing_damaged_archive(path, f"the zip archive as downloaded, whole, or the {MEMBER} "
                                        f"it holds"), zipfile.ZipFile(path) as archive:
        members = [m for m in archive.namelist() if os.path.basename(m) == MEMBER]
        if len(members) != 1:
            raise MalformedFile(f"{path}: expected one {MEMBER} in the zip archive, "
                                f"found {len(members)} among {archive.namelist()}")
        return archive.read(members[0]), f"{path}:{members[0]}"


def parse_pairs(data, name):
    """Every line as a Pair; a malformed line raises MalformedFile naming it."""
    pairs = []
    for number, line in enumerate(checked_lines(data, name, "lines of English<TAB>German", item="pair"),
                                  start=1):
        fields = line.split("\t")
        if len(fields) not in (2, 3):
            raise MalformedFile(
                f"{name} line {number}: {len(fields)} tab-separated field(s); expected "
                f"English<TAB>German, optionally <TAB>attribution: {line[:80]!r}")
        english, german = fields[0].strip(), fields[1].strip()
        for side, text in (("English", english), ("German", german)):
            if not text:
                raise MalformedFile(f"{name} line {number}: the {side} side is empty; "
                                    f"expected a sentence")
        pairs.append(Pair(english, german))
    return pairs


def sentence_groups(pairs):
    """Group index of each pair: pairs sharing an English or a German sentence, transitively,
    are in one group.  Groups are numbered in order of first appearance."""
    parent = {}

    def root(node):
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for pair in pairs:
        a, b = root(("en", pair.english)), root(("de", pair.german))
        if a != b:
            parent[a] = b
    number = {}
    return [number.setdefault(root(("en", p.english)), len(number)) for p in pairs]


def moses_lengths(pairs):
    """Longer side of each pair in Moses tokens, tokenized as the pipeline tokenizes."""
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    tools = {lang: (MosesPunctNormalizer(lang), MosesTokenizer(lang)) for lang in ("en", "de")}

    def count(text, lang):
        normalizer, tokenizer = tools[lang]
        return len(tokenizer.tokenize(normalizer.normalize(text), aggressive_dash_splits=True,
                                      escape=True))

    return [max(count(p.english, "en"), count(p.german, "de")) for p in pairs]


def split_pairs(pairs, lengths, *, seed, max_len, dev_pairs, test_short_pairs):
    """{split: [pair index]}: whole groups, long ones in test (see the module's docstring)."""
    groups = sentence_groups(pairs)
    members = {}
    for index, group in enumerate(groups):
        members.setdefault(group, []).append(index)
    long_groups = {groups[i] for i, n in enumerate(lengths) if n > max_len}
    short_groups = [g for g in members if g not in long_groups]  # in order of appearance
    rng = random.Random(seed)
    rng.shuffle(short_groups)
    chosen = {"dev": [], "test": []}
    wanted = {"dev": dev_pairs, "test": test_short_pairs}
    rest = []
    for group in short_groups:
        target = next((s for s in ("dev", "test") if len(chosen[s]) < wanted[s]), None)
        (chosen[target] if target else rest).extend(members[group])
    for split in ("dev", "test"):
        if len(chosen[split]) < wanted[split]:
            raise MalformedFile(f"only {len(pairs)} pairs: too few for {dev_pairs} dev and "
                                f"{test_short_pairs} short test pairs and a training set")
    test = chosen["test"] + [i for g in sorted(long_groups) for i in members[g]]
    rng.shuffle(test)
    return {"train": sorted(rest), "dev": sorted(chosen["dev"]), "test": test}, groups


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def write_split(out_dir, pairs, split, counts, source_line):
    """DIR/{train,dev,test}.{de,en}, DIR/counts.json and DIR/SOURCE (the engine gives DIR a
    temporary name and publishes it once the step succeeds)."""
    os.makedirs(out_dir, exist_ok=True)
    for name, indices in split.items():
        for lang, side in (("de", "german"), ("en", "english")):
            with open(os.path.join(out_dir, f"{name}.{lang}"), "w", encoding="utf-8") as f:
                f.writelines(getattr(pairs[i], side) + "\n" for i in indices)
    with open(os.path.join(out_dir, "counts.json"), "w") as f:
        json.dump(counts, f, indent=1)
        f.write("\n")
    with open(os.path.join(out_dir, "SOURCE"), "w") as f:
        f.write(source_line + "\n")


def split_command(args):
    data, name = read_bytes(args.source)
    pairs = parse_pairs(data, name)
    lengths = moses_lengths(pairs)
    split, groups = split_pairs(pairs, lengths, seed=args.seed, max_len=args.max_len,
                                dev_pairs=args.dev_pairs, test_short_pairs=args.test_short_pairs)
    long_pairs = sum(n > args.max_len for n in lengths)
    counts = {
        "pairs read": len(pairs),
        "distinct English sentences": len({p.english for p in pairs}),
        "distinct German sentences": len({p.german for p in pairs}),
        "sentence groups": len(set(groups)),
        f"long pairs (a side of more than {args.max_len} Moses tokens)": long_pairs,
        "train pairs": len(split["train"]),
        "dev pairs": len(split["dev"]),
        "test pairs": len(split["test"]),
        "test pairs within the limit": sum(lengths[i] <= args.max_len for i in split["test"]),
    }
    with open(args.source, "rb") as f:
        file_sha = sha256(f.read())
    source = (f"from {os.path.abspath(args.source)} (sha256 {file_sha}); pairs file {name} "
              f"(sha256 {sha256(data)})")
    write_split(args.out_dir, pairs, split, counts, source)
    print(source)
    for key, value in counts.items():
        print(f"{key:>58}: {value:,}")


def download_command(args):
    """ARGS.url to ARGS.out through corpora.fetch (ARGS.out.part, resumed by a re-run); kept
    only if it is a zip archive."""
    if os.path.exists(args.out):
        raise MalformedFile(f"{args.out} exists; expected a new file for the download "
                            f"(give it as --from, or move it away)")
    by_hand = (f"download it with a web browser and save it as {os.path.abspath(args.out)} "
               f"(or pass it to prepare-tatoeba.sh --from), then re-run")
    fetch(args.url, args.out, by_hand=by_hand)
    with open(args.out, "rb") as f:
        data = f.read()
    if not zipfile.is_zipfile(args.out):
        os.remove(args.out)  # what this download just wrote, not a file of the user's
        raise MalformedFile(f"{args.url} did not send a zip archive, or not all of it (it "
                            f"began {data[:16]!r}); {by_hand}")
    print(f"downloaded {args.url} to {args.out} (sha256 {sha256(data)})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser(
        "check", help="check every line; print the number of pairs (stderr) and the sha256 of the "
        "pairs file (stdout), which defines the data")
    check.add_argument("--from", dest="source", required=True)
    split = commands.add_parser("split", help="the train/dev/test split, raw text")
    split.add_argument("--from", dest="source", required=True)
    split.add_argument("--out-dir", required=True)
    split.add_argument("--seed", type=int, default=1)
    split.add_argument("--max-len", type=int, required=True)
    split.add_argument("--dev-pairs", type=int, default=1000)
    split.add_argument("--test-short-pairs", type=int, default=2000)
    download = commands.add_parser("download", help="fetch the current export")
    download.add_argument("--url", default=EXPORT_URL)
    download.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            data, name = read_bytes(args.source)
            print(f"{name}: {len(parse_pairs(data, name)):,} pairs", file=sys.stderr)
            print(sha256(data))
        elif args.command == "split":
            split_command(args)
        else:
            download_command(args)
    except MalformedFile as e:
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    main()
