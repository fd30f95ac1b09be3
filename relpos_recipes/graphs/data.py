"""Preparing a language pair (WMT19 De-En and Zh-En, the synthetic pair, Tatoeba) and building
its test sets, as steps.

A prepared folder WORK holds, for pair SRC-TGT:
  orig/      the corpora and test sets as plain text (fetched, generated or split)
  text/      normalised/tokenised text; train.clean.* cleaned (empty lines, length ratio)
  seg/       the segmentation model (BPE codes and vocabularies, or SentencePiece models) and
             the segmented splits
  dict/      fairseq's dictionaries
  lenN/      the training pairs whose both sides have at most N subword tokens
  data-bin/lenN/shard0..S-1   binarized for fairseq-train (valid and test in shard0)
  segmentation.env, testsets.env   what translate.sh and build-test-sets.sh need to know
  testsets/NAME/   raw, tok, seg, longer-side, bin/, meta.env of each test set
"""
import dataclasses
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..engine import Display, Out, Policy, Resources, Step, StepError, unique_steps
from ..engine.step import MANIFEST_DIR
from . import tool

NEWSTEST_ALL_YEARS = (2008, 2009, 2010, 2011, 2012, 2013, 2014, 2016, 2017, 2018)
JOINED_SETS = {"concat_seq": 2, "concat3_seq": 3}
PREPARED_REFUSAL = "{home} was prepared with other settings ({title}: {change}); use another --work-dir or delete it"


@dataclasses.dataclass
class Fetcher:
    """Where a preparation's corpora and test sets come from: steps writing
    WORK/orig/train.NAME.{SRC,TGT} (``corpus``) and WORK/orig/NAME.{SRC,TGT} (``testset``)."""

    corpus: Callable[["Preparation", str], List[Step]]
    testset: Callable[["Preparation", str], List[Step]]


@dataclasses.dataclass
class Preparation:
    """Everything that defines a prepared folder."""

    work: Path
    pair: str
    src: str
    tgt: str
    title: str
    textproc: str  # moses | normalize | none
    seg: str  # bpe | spm
    seg_size: int
    corpora: Sequence[str]
    dev_sets: Sequence[str]
    test_set: str
    lens: Sequence[int]
    shards: int
    fetcher: Fetcher
    default_test_sets: Sequence[str]
    concat_of: str = ""
    clean_ratio: float = 9
    bpe_vocab_threshold: int = 50
    threads: int = 1
    on_change: str = "refuse"  # the demo passes "redo": its data follows its options
    # whether lenN's dev set holds only the pairs within N too (the dev loss the leaderboard
    # selects learning rates and stops on measures what training can learn, not extrapolation)
    dev_within_limit: bool = False

    @property
    def langs(self) -> Tuple[str, str]:
        return (self.src, self.tgt)

    def path(self, *parts: str) -> Path:
        return self.work.joinpath(*parts)

    def step(self, name: str, command, inputs=(), *, home: Optional[Path] = None, cpus: int = 1,
             identity: Optional[Sequence[str]] = None, title: str = "", log: Optional[Path] = None) -> Step:
        """A step of this preparation: recorded relative to WORK, refused (or redone) when its
        command changes."""
        return Step(name, command, home=home or self.work, root=self.work, inputs=inputs, identity=identity,
                    policy=Policy(on_change=self.on_change, refusal=PREPARED_REFUSAL),
                    resources=Resources(cpus=min(cpus, self.threads)), display=Display(title=title, log=log))


# ----------------------------------------------------------------------------------------
# fetchers
# ----------------------------------------------------------------------------------------
def wmt_fetcher(local_dirs: Sequence[Path], offline: bool) -> Fetcher:
    """The WMT19 corpora and test sets through scripts/lib/corpora.py: from the local
    folders, WORK/raw (earlier downloads) or downloaded.  Where it looks is not part of what
    a fetched corpus is (its content is), so another --local-dir does not make it another."""
    search = [a for d in local_dirs for a in ("--search", d)] + (["--offline"] if offline else [])

    def fetch(kind: str, stem: str):
        def steps(p: Preparation, name: str) -> List[Step]:
            prefix = p.path("orig", stem.format(name=name))
            out = Out(prefix, also=tuple(Path(f"{prefix}.{lang}") for lang in p.langs), prefix=True)
            command = [tool("corpora"), kind, "--pair", p.pair, "--name", name,
                       "--raw-dir", p.path("raw"), "--out-prefix", out, *search]
            return [p.step(f"orig.{stem.format(name=name)}", command, identity=["fetch", p.pair, kind, name],
                           title=f"fetch {name}")]

        return steps

    return Fetcher(corpus=fetch("corpus", "train.{name}"), testset=fetch("testset", "{name}"))


# ----------------------------------------------------------------------------------------
# the preparation
# ----------------------------------------------------------------------------------------
def preparation_steps(p: Preparation) -> List[Step]:
    steps: List[Step] = []
    for corpus in p.corpora:
        steps += p.fetcher.corpus(p, corpus)
    for name in (*p.dev_sets, p.test_set):
        steps += p.fetcher.testset(p, name)
    settings = [f"PAIR={p.pair}", f"SRC={p.src}", f"TGT={p.tgt}", f"TEXTPROC={p.textproc}", f"SEG={p.seg}",
                f"SEG_SIZE={p.seg_size}", f"BPE_VOCAB_THRESHOLD={p.bpe_vocab_threshold}"]
    steps.append(p.step("segmentation.env", [tool("write-env"), "--out", Out(p.path("segmentation.env")),
                                             *settings], title="record the segmentation settings"))
    steps.append(p.step("testsets.env", [tool("write-env"), "--out", Out(p.path("testsets.env")),
                                         f"DEFAULT_SETS={','.join(p.default_test_sets)}",
                                         f"CONCAT_OF={p.concat_of}"], title="record the default test sets"))
    parts = {"train": [f"train.{c}" for c in p.corpora], "valid": list(p.dev_sets), "test": [p.test_set]}
    for split, names in parts.items():
        for lang, other in (p.langs, p.langs[::-1]):
            inputs = [p.path("orig", f"{n}.{lang}") for n in names]
            steps.append(p.step(
                f"text.{split}.{lang}",
                [tool("textproc"), "--mode", p.textproc, "--lang", lang, "--threads", p.threads,
                 "--out", Out(p.path("text", f"{split}.{lang}")), *inputs,
                 "--parallel-to", *[p.path("orig", f"{n}.{other}") for n in names]],
                inputs + [p.path("orig", f"{n}.{other}") for n in names], cpus=p.threads,
                title=f"{_textproc_words(p.textproc)} {split}.{lang}"))
    units = {lang: "char" if lang in ("zh", "ja") else "word" for lang in p.langs}
    clean = [p.path("text", f"train.{lang}") for lang in p.langs]
    steps.append(p.step("clean", [
        tool("filter-pairs"), "--src", clean[0], "--tgt", clean[1],
        "--out-src", Out(p.path("text", f"train.clean.{p.src}")),
        "--out-tgt", Out(p.path("text", f"train.clean.{p.tgt}")), "--min-len", 1,
        "--max-ratio", _number(p.clean_ratio), "--src-unit", units[p.src], "--tgt-unit", units[p.tgt],
        "--label", f"cleaning (empty lines, length ratio > {_number(p.clean_ratio)})",
        "--report", Out(p.path("text", "clean.txt"), also=(p.path("text", "clean.json"),))],
        clean, title="clean the training pairs"))
    steps += _segmentation_steps(p)
    steps.append(p.step("dict", [
        "fairseq-preprocess", "--source-lang", p.src, "--target-lang", p.tgt,
        "--trainpref", p.path("seg", "train"), "--destdir", Out(p.path("dict")), "--dict-only",
        "--workers", p.threads], [p.path("seg", f"train.{lang}") for lang in p.langs],
        cpus=p.threads, log=p.path("dict.log"), title="fairseq dictionaries"))
    for n in p.lens:
        train = [p.path("seg", f"train.{lang}") for lang in p.langs]
        steps.append(p.step(f"filter.len{n}", [
            tool("filter-pairs"), "--src", train[0], "--tgt", train[1],
            "--out-src", Out(p.path(f"len{n}", f"train.{p.src}")),
            "--out-tgt", Out(p.path(f"len{n}", f"train.{p.tgt}")), "--max-len", n,
            "--label", f"length filter (source or target > {n} subword tokens)",
            "--report", Out(p.path(f"len{n}", "filter.txt"), also=(p.path(f"len{n}", "filter.json"),))],
            train, title=f"length filter at {n}"))
        valid = p.path("seg", "valid")
        if p.dev_within_limit:
            valid = p.path(f"len{n}", "valid")
            dev = [p.path("seg", f"valid.{lang}") for lang in p.langs]
            steps.append(p.step(f"filter.valid.len{n}", [
                tool("filter-pairs"), "--src", dev[0], "--tgt", dev[1],
                "--out-src", Out(p.path(f"len{n}", f"valid.{p.src}")),
                "--out-tgt", Out(p.path(f"len{n}", f"valid.{p.tgt}")), "--max-len", n,
                "--label", f"dev pairs within the limit (source and target <= {n} subword tokens)",
                "--report", Out(p.path(f"len{n}", "valid-filter.txt"), also=(p.path(f"len{n}", "valid-filter.json"),))],
                dev, title=f"dev pairs within {n}"))
        steps.append(p.step(f"bin.len{n}", [
            tool("binarize"), "--source-lang", p.src, "--target-lang", p.tgt,
            "--srcdict", p.path("dict", f"dict.{p.src}.txt"), "--tgtdict", p.path("dict", f"dict.{p.tgt}.txt"),
            "--trainpref", p.path(f"len{n}", "train"), "--validpref", valid,
            "--testpref", p.path("seg", "test"), "--shards", p.shards,
            "--destdir", Out(p.path("data-bin", f"len{n}")), "--workers", p.threads],
            [p.path("dict"), *[p.path(f"len{n}", f"train.{lang}") for lang in p.langs],
             *[Path(f"{valid}.{lang}") for lang in p.langs],
             *[p.path("seg", f"test.{lang}") for lang in p.langs]],
            cpus=p.threads, log=p.path("data-bin", f"len{n}.log"), title=f"binarize len{n}"))
    return steps


def _textproc_words(mode: str) -> str:
    return {"moses": "tokenize", "normalize": "normalize", "none": "copy"}[mode]


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def segmentation_models(p_or_work, seg: str, langs: Sequence[str]) -> Dict[str, List[Path]]:
    """The files that segment each language: BPE codes and vocabulary, or its SentencePiece model."""
    seg_dir = Path(p_or_work) / "seg"
    if seg == "bpe":
        return {lang: [seg_dir / "codes", seg_dir / f"vocab.{lang}"] for lang in langs}
    return {lang: [seg_dir / f"spm.{lang}.model"] for lang in langs}


def segment_command(work: Path, seg: str, lang: str, source: Path, out: Out, threads: int,
                    vocabulary_threshold: int) -> list:
    seg_dir = work / "seg"
    if seg == "bpe":
        return ["subword-nmt", "apply-bpe", "-c", seg_dir / "codes", "--vocabulary",
                seg_dir / f"vocab.{lang}", "--vocabulary-threshold", vocabulary_threshold,
                "--num-workers", threads, "--input", source, "--output", out]
    return [tool("spm"), "encode", "--model", seg_dir / f"spm.{lang}.model", "--input", source,
            "--output", out, "--threads", threads]


def _segmentation_steps(p: Preparation) -> List[Step]:
    clean = {lang: p.path("text", f"train.clean.{lang}") for lang in p.langs}
    steps = []
    if p.seg == "bpe":
        steps.append(p.step("seg.learn", [
            "subword-nmt", "learn-joint-bpe-and-vocab", "--input", clean[p.src], clean[p.tgt],
            "-s", p.seg_size, "-o", Out(p.path("seg", "codes")), "--write-vocabulary",
            Out(p.path("seg", f"vocab.{p.src}")), Out(p.path("seg", f"vocab.{p.tgt}")),
            "--num-workers", p.threads], list(clean.values()), cpus=p.threads,
            title=f"learn joint BPE ({p.seg_size} merges)"))
    else:
        for lang in p.langs:
            prefix = p.path("seg", f"spm.{lang}")
            model = Out(prefix, also=(Path(f"{prefix}.model"), Path(f"{prefix}.vocab")), prefix=True)
            steps.append(p.step(f"seg.learn.{lang}", [
                tool("spm"), "train", "--input", clean[lang], "--model-prefix", model,
                "--vocab-size", p.seg_size, "--character-coverage", 0.9995 if lang in ("zh", "ja") else 1.0,
                "--threads", p.threads, "--soft-vocab-limit"], [clean[lang]], cpus=p.threads,
                title=f"learn SentencePiece {lang} ({p.seg_size} pieces)"))
    models = segmentation_models(p.work, p.seg, p.langs)
    for split in ("train", "valid", "test"):
        for lang in p.langs:
            source = clean[lang] if split == "train" else p.path("text", f"{split}.{lang}")
            steps.append(p.step(
                f"seg.{split}.{lang}",
                segment_command(p.work, p.seg, lang, source, Out(p.path("seg", f"{split}.{lang}")),
                                p.threads, p.bpe_vocab_threshold),
                [source, *models[lang]], cpus=p.threads, title=f"segment {split}.{lang}"))
    return steps


def summary(p: Preparation) -> str:
    """What the preparation printed at its end: the cleaning and each length filter's counts."""
    lines = [f"== {p.title} prepared in {p.work}", p.path("text", "clean.txt").read_text().rstrip("\n")]
    for n in p.lens:
        lines.append(p.path(f"len{n}", "filter.txt").read_text().rstrip("\n"))
        lines.append(f"   training data: {p.path('data-bin', f'len{n}')}  (shard0..shard{p.shards - 1}; "
                     "valid/test in shard0)")
    return "\n".join(lines)


def refuse_foreign_work(work: Path, option: str = "--work-dir") -> None:
    """A preparation clears temporary files and rewrites what it makes: never in a folder it
    does not own.  Its own folders have step manifests; corpora placed in raw/ beforehand are
    welcome."""
    if not work.is_dir() or (work / MANIFEST_DIR).exists():
        return
    other = sorted(p.name for p in work.iterdir() if p.name != "raw")
    if other:
        raise StepError(f"{option} {work} holds files that no preparation made, such as "
                        f"{','.join(other[:3])}; choose a new or empty folder (corpora may go in its raw/ beforehand)")


# ----------------------------------------------------------------------------------------
# test sets
# ----------------------------------------------------------------------------------------
@dataclasses.dataclass
class Prepared:
    """A prepared folder as build-test-sets.sh and translate.sh see it (segmentation.env)."""

    work: Path
    pair: str
    src: str
    tgt: str
    textproc: str
    seg: str
    bpe_vocab_threshold: int
    default_sets: List[str]
    concat_of: str

    @classmethod
    def read(cls, work: Path) -> "Prepared":
        env = read_env(work / "segmentation.env")
        sets = read_env(work / "testsets.env") if (work / "testsets.env").exists() else {}
        try:
            return cls(work=work, pair=env["PAIR"], src=env["SRC"], tgt=env["TGT"], textproc=env["TEXTPROC"],
                       seg=env["SEG"], bpe_vocab_threshold=int(env.get("BPE_VOCAB_THRESHOLD", 50)),
                       default_sets=[s for s in sets.get("DEFAULT_SETS", "").split(",") if s],
                       concat_of=sets.get("CONCAT_OF", ""))
        except KeyError as missing:
            raise StepError(f"{work / 'segmentation.env'} has no {missing.args[0]} (is {work} prepared?)") from None

    @property
    def langs(self) -> Tuple[str, str]:
        return (self.src, self.tgt)


def read_env(path: Path) -> Dict[str, str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StepError(f"{path} is missing (is {Path(path).parent} prepared? run scripts/prepare-*.sh)") from None
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def testset_steps(prep: Prepared, name: str, fetch: Callable[[str], List[Step]], threads: int,
                  on_change: str = "redo") -> List[Step]:
    """The steps that build WORK/testsets/NAME: raw, tok and seg text, the longer side of each
    pair, the binarized set and its meta.env.  ``fetch(NAME)`` gives the steps that write
    WORK/orig/NAME.{SRC,TGT} of a WMT set."""
    work, folder = prep.work, prep.work / "testsets" / name
    steps: List[Step] = []

    def step(step_name, command, inputs, cpus: int = 1, title: str = "", log: Optional[Path] = None):
        steps.append(Step(step_name, command, home=folder, root=work, inputs=inputs,
                          policy=Policy(on_change=on_change), resources=Resources(cpus=cpus),
                          display=Display(title=title, log=log)))

    if name in JOINED_SETS:
        if not prep.concat_of:
            raise StepError(f"{name} is not defined for {work} (see --help)")
        whole = work / "testsets" / prep.concat_of
        steps += testset_steps(prep, prep.concat_of, fetch, threads, on_change)
        for lang in prep.langs:
            for kind in ("raw", "tok", "seg"):
                step(f"{kind}.{lang}", [tool("concat-lines"), "--n", JOINED_SETS[name], "--input",
                                         whole / f"{kind}.{lang}", "--out", Out(folder / f"{kind}.{lang}")],
                     [whole / f"{kind}.{lang}"], title=f"{name}: join {kind}.{lang}")
    else:
        if name == "newstest_all":
            if prep.pair != "de-en":
                raise StepError("newstest_all is defined for de-en only")
            parts = [f"newstest{year}" for year in NEWSTEST_ALL_YEARS]
        else:
            parts = [name]
        for part in parts:
            have_text = all((work / "orig" / f"{part}.{lang}").exists() for lang in prep.langs)
            fetched = fetch(part) if part.startswith(("newstest", "newsdev")) or not have_text else []
            if not fetched and not have_text:
                raise StepError(f"unknown test set '{name}' (see --help)")
            steps += fetched
        for lang in prep.langs:
            raw = [work / "orig" / f"{part}.{lang}" for part in parts]
            step(f"raw.{lang}", [tool("textproc"), "--mode", "none", "--lang", lang,
                                 "--out", Out(folder / f"raw.{lang}"), *raw], raw, title=f"{name}: raw.{lang}")
            step(f"tok.{lang}", [tool("textproc"), "--mode", prep.textproc, "--lang", lang, "--threads", threads,
                                 "--out", Out(folder / f"tok.{lang}"), folder / f"raw.{lang}"],
                 [folder / f"raw.{lang}"], cpus=threads, title=f"{name}: {_textproc_words(prep.textproc)} {lang}")
            models = segmentation_models(work, prep.seg, prep.langs)[lang]
            step(f"seg.{lang}", segment_command(work, prep.seg, lang, folder / f"tok.{lang}",
                                                Out(folder / f"seg.{lang}"), threads, prep.bpe_vocab_threshold),
                 [folder / f"tok.{lang}", *models], cpus=threads, title=f"{name}: segment {lang}")
    seg = [folder / f"seg.{lang}" for lang in prep.langs]
    step("longer-side", [tool("longer-side"), "--src", seg[0], "--tgt", seg[1],
                         "--out", Out(folder / "longer-side")], seg, title=f"{name}: longer sides")
    dicts = [work / "dict" / f"dict.{lang}.txt" for lang in prep.langs]
    step("bin", ["fairseq-preprocess", "--source-lang", prep.src, "--target-lang", prep.tgt,
                 "--testpref", folder / "seg", "--srcdict", dicts[0], "--tgtdict", dicts[1],
                 "--destdir", Out(folder / "bin"), "--workers", 1],
         [*seg, *dicts], log=folder / "preprocess.log", title=f"{name}: binarize")
    step("meta", [tool("testset-meta"), "--dir", folder, "--name", name, "--pair", prep.pair,
                  "--src", prep.src, "--tgt", prep.tgt, "--out", Out(folder / "meta.env")],
         [*(folder / f"raw.{lang}" for lang in prep.langs), *seg, folder / "bin"], title=f"{name}: check")
    return steps


def testsets_graph(prep: Prepared, names: Sequence[str], fetch: Callable[[str], List[Step]],
                   threads: int) -> List[Step]:
    return unique_steps(*(testset_steps(prep, name, fetch, threads) for name in names))
