"""Preparing a language pair (WMT19 De-En and Zh-En, the synthetic pair, Tatoeba, a corpus the
user brings) and building its test sets, as steps.

A prepared folder WORK holds, for pair SRC-TGT:
  split/     (Tatoeba, a user's corpus) the files taken in: a split of the export, the user's
             files checked, a dev set held out of the training pairs
  orig/      the corpora and test sets as plain text (fetched, generated or split)
  text/      normalised/tokenised text; train.clean.* cleaned (empty lines, length ratio)
  seg/       the segmentation model (BPE codes and vocabularies, or SentencePiece models) and
             the segmented splits (with segmentation "none", the text itself)
  dict/      fairseq's dictionaries
  lenN/      the training pairs whose both sides have at most N subword tokens
  lenN-concat/  lenN's pairs and pairs of them joined within N (--concat-augment)
  bandLO-HI/ the training and dev pairs whose length is in the band LO..HI (--train-band)
  data-bin/NAME/shard0..S-1   binarized for fairseq-train (valid and test in shard0), for
             each NAME above
  segmentation.env, testsets.env   what translate.sh and build-test-sets.sh need to know
  testsets/NAME/   raw, tok, seg, longer-side, bin/, meta.env of each test set
"""
import dataclasses
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from relpos_analysis.buckets import Bucket, band_spec

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


@dataclasses.dataclass(frozen=True)
class Concat:
    """The concatenation augmentation of each lenN (relpos_recipes.tools.concat_augment): the
    share of the training pairs offered a partner, and the seed of the draws."""

    share: float = 1.0
    seed: int = 1


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
    # training bands besides the limits (data-bin/bandLO-HI), their length on this side
    bands: Sequence[Bucket] = ()
    band_side: str = "longer"
    concat: Optional[Concat] = None  # data-bin/lenN-concat besides each lenN

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
    """The WMT19 corpora and test sets through relpos_recipes.tools.wmt_sources: from the local
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


def split_fetcher(split: Callable[[Preparation, str], List[Step]], parts: Dict[str, str]) -> Fetcher:
    """Corpora and test sets copied from WORK/split/PART.{SRC,TGT}, which the steps of
    ``split(p, PART)`` write (a part of the Tatoeba export, a user's files checked): each
    corpus from the part "train", the dev set "valid" and each test set from the part
    ``parts`` names for it."""

    def copy(p: Preparation, part: str, stem: str) -> List[Step]:
        steps = split(p, part)
        for lang in p.langs:
            source = p.path("split", f"{part}.{lang}")
            steps.append(p.step(f"orig.{stem}.{lang}", [tool("textproc"), "--mode", "none", "--lang", lang, "--out",
                                                        Out(p.path("orig", f"{stem}.{lang}")), source], [source],
                                title=f"take {stem}.{lang}"))
        return steps

    return Fetcher(corpus=lambda p, name: copy(p, "train", f"train.{name}"),
                   testset=lambda p, name: copy(p, parts[name], name) if name in parts else [])


@dataclasses.dataclass(frozen=True)
class HoldOut:
    """A dev set drawn from the training pairs (relpos_recipes.tools.user_corpus take --hold-out)."""

    pairs: int
    max_len: int
    seed: int


def corpus_fetcher(train: Path, dev: Optional[Path], tests: Dict[str, Path], hold_out: Optional[HoldOut]) -> Fetcher:
    """A user's corpus (prepare-corpus.sh): the files PREFIX.{SRC,TGT} of ``train``, ``dev`` and
    each test set, checked and taken into WORK/split/{train,dev,NAME} (relpos_recipes.tools.user_corpus);
    without ``dev``, the dev set is ``hold_out``'s pairs of ``train``."""

    def take(p: Preparation, part: str, prefix: Path, hold: Optional[HoldOut] = None) -> Step:
        files = [Path(f"{prefix}.{lang}") for lang in p.langs]
        out = [Out(p.path("split", f"{part}.{lang}")) for lang in p.langs]
        held = [] if hold is None else [
            "--hold-out", hold.pairs, "--max-len", hold.max_len, "--src-unit", length_unit(p.src),
            "--tgt-unit", length_unit(p.tgt), "--seed", hold.seed,
            "--dev-src", Out(p.path("split", f"dev.{p.src}")), "--dev-tgt", Out(p.path("split", f"dev.{p.tgt}"))]
        return p.step(f"split.{part}", [tool("take-corpus"), "--src", files[0], "--tgt", files[1], "--out-src", out[0],
                                        "--out-tgt", out[1], *held], files,
                      title=f"check and take {part}" + (" (a dev set held out)" if held else ""))

    def split(p: Preparation, part: str) -> List[Step]:
        if part == "train" or (part == "dev" and dev is None):
            return [take(p, "train", train, None if dev else hold_out)]
        return [take(p, part, dev if part == "dev" else tests[part])]

    return split_fetcher(split, {"valid": "dev", **{name: name for name in tests}})


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
    units = {lang: length_unit(lang) for lang in p.langs}
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
    # fairseq-preprocess's dictionaries, byte for byte (tests/recipes/test_binarize.py), without
    # its 2 s of imports; the identity stays the command that made them before
    what = ["--source-lang", p.src, "--target-lang", p.tgt, "--trainpref", p.path("seg", "train")]
    steps.append(p.step("dict", [tool("binarize"), *what, "--dict-only", "--destdir", Out(p.path("dict")),
                                 "--workers", p.threads],
                        [p.path("seg", f"train.{lang}") for lang in p.langs], cpus=p.threads, log=p.path("dict.log"),
                        title="fairseq dictionaries",
                        identity=["fairseq-preprocess", *what, "--destdir", p.path("dict"), "--dict-only",
                                  "--workers", p.threads]))
    for n in p.lens:
        steps += limit_steps(p, n)
    for band in p.bands:
        steps += band_steps(p, band)
    return steps


def limit_steps(p: Preparation, n: int) -> List[Step]:
    """data-bin/lenN: the training pairs whose both sides have at most N subword tokens (with
    dev_within_limit, the dev pairs too); with ``p.concat`` also data-bin/lenN-concat."""
    steps = [_filter_step(p, f"filter.len{n}", p.path("seg", "train"), p.path(f"len{n}", "train"), ["--max-len", n],
                          f"length filter (source or target > {n} subword tokens)", "filter", f"length filter at {n}")]
    valid = p.path("seg", "valid")
    if p.dev_within_limit:
        valid = p.path(f"len{n}", "valid")
        steps.append(_filter_step(p, f"filter.valid.len{n}", p.path("seg", "valid"), valid, ["--max-len", n],
                                  f"dev pairs within the limit (source and target <= {n} subword tokens)",
                                  "valid-filter", f"dev pairs within {n}"))
    steps.append(_binarize_step(p, f"len{n}", valid, workers_identify=True))
    if p.concat is not None:
        steps += concat_steps(p, n, valid)
    return steps


def concat_steps(p: Preparation, n: int, valid: Path) -> List[Step]:
    """data-bin/lenN-concat: lenN's training pairs and pairs of them joined within N
    (relpos_recipes.tools.concat_augment); lenN's dev and test sets."""
    folder, train = f"len{n}-concat", [p.path(f"len{n}", f"train.{lang}") for lang in p.langs]
    concat = p.step(f"concat.len{n}", [
        tool("concat-augment"), "--src", train[0], "--tgt", train[1], "--max-len", n, "--share", _number(p.concat.share),
        "--seed", p.concat.seed, "--out-src", Out(p.path(folder, f"train.{p.src}")),
        "--out-tgt", Out(p.path(folder, f"train.{p.tgt}")),
        "--report", Out(p.path(folder, "concat.txt"), also=(p.path(folder, "concat.json"),))],
        train, title=f"concatenation augmentation of len{n}")
    return [concat, _binarize_step(p, folder, valid)]


def band_folder(band: Bucket) -> str:
    """bandLO-HI: fairseq reads ':' in a data path as a separator."""
    return f"band{band.lo}-{band.hi}"


def band_steps(p: Preparation, band: Bucket) -> List[Step]:
    """data-bin/bandLO-HI: the training pairs and the dev pairs whose length (on
    ``p.band_side``) is in the band: the dev loss measures the band a system is trained on."""
    folder, spec = band_folder(band), band_spec(band)
    rule = ["--band", spec, "--band-side", p.band_side]
    what = f"length band {spec} ({p.band_side} side, subword tokens)"
    return [_filter_step(p, f"filter.{folder}", p.path("seg", "train"), p.path(folder, "train"), rule, what,
                         "filter", f"training pairs in the band {spec}"),
            _filter_step(p, f"filter.valid.{folder}", p.path("seg", "valid"), p.path(folder, "valid"), rule,
                         f"dev pairs in the {what}", "valid-filter", f"dev pairs in the band {spec}"),
            _binarize_step(p, folder, p.path(folder, "valid"))]


def _filter_step(p: Preparation, name: str, source: Path, out: Path, rule: Sequence, label: str, report: str,
                 title: str) -> Step:
    """SOURCE.{SRC,TGT}'s pairs that ``rule`` (filter-pairs options) keeps, as OUT.{SRC,TGT}; the
    counts in OUT's folder's REPORT.txt and REPORT.json."""
    inputs = [Path(f"{source}.{lang}") for lang in p.langs]
    return p.step(name, [
        tool("filter-pairs"), "--src", inputs[0], "--tgt", inputs[1], "--out-src", Out(Path(f"{out}.{p.src}")),
        "--out-tgt", Out(Path(f"{out}.{p.tgt}")), *rule, "--label", label,
        "--report", Out(out.parent / f"{report}.txt", also=(out.parent / f"{report}.json",))], inputs, title=title)


def _binarize_step(p: Preparation, folder: str, valid: Path, workers_identify: bool = False) -> Step:
    """data-bin/FOLDER from FOLDER/train, the dev set ``valid`` and seg/test.  What it makes is
    its identity, not how many workers make it, so that a recipe adding a band to a folder
    prepared before (with its own --threads) finds it done; the lenN steps, whose folders
    were made before, keep their command as their identity (``workers_identify``)."""
    destdir = p.path("data-bin", folder)
    what = ["--source-lang", p.src, "--target-lang", p.tgt,
            "--srcdict", p.path("dict", f"dict.{p.src}.txt"), "--tgtdict", p.path("dict", f"dict.{p.tgt}.txt"),
            "--trainpref", p.path(folder, "train"), "--validpref", valid,
            "--testpref", p.path("seg", "test"), "--shards", p.shards]
    inputs = [p.path("dict"), *[p.path(folder, f"train.{lang}") for lang in p.langs],
              *[Path(f"{valid}.{lang}") for lang in p.langs], *[p.path("seg", f"test.{lang}") for lang in p.langs]]
    return p.step(f"bin.{folder}", [tool("binarize"), *what, "--destdir", Out(destdir), "--workers", p.threads], inputs,
                  identity=None if workers_identify else ["binarize", *what, "--destdir", destdir],
                  cpus=p.threads, log=p.path("data-bin", f"{folder}.log"), title=f"binarize {folder}")


def length_unit(lang: str) -> str:
    """How a sentence's length is counted before segmentation: characters for languages
    written without spaces, words otherwise."""
    return "char" if lang in ("zh", "ja") else "word"


def _textproc_words(mode: str) -> str:
    return {"moses": "tokenize", "normalize": "normalize", "none": "copy"}[mode]


def _segment_words(seg: str) -> str:
    return "take" if seg == "none" else "segment"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def segmentation_models(p_or_work, seg: str, langs: Sequence[str]) -> Dict[str, List[Path]]:
    """The files that segment each language: BPE codes and vocabulary, or its SentencePiece model."""
    seg_dir = Path(p_or_work) / "seg"
    if seg == "bpe":
        return {lang: [seg_dir / "codes", seg_dir / f"vocab.{lang}"] for lang in langs}
    if seg == "none":
        return {lang: [] for lang in langs}
    return {lang: [seg_dir / f"spm.{lang}.model"] for lang in langs}


def segment_command(work: Path, seg: str, lang: str, source: Path, out: Out, threads: int,
                    vocabulary_threshold: int) -> list:
    seg_dir = work / "seg"
    if seg == "bpe":
        return ["subword-nmt", "apply-bpe", "-c", seg_dir / "codes", "--vocabulary",
                seg_dir / f"vocab.{lang}", "--vocabulary-threshold", vocabulary_threshold,
                "--num-workers", threads, "--input", source, "--output", out]
    if seg == "none":  # already tokenized: its tokens are what the model reads
        return [tool("textproc"), "--mode", "none", "--lang", lang, "--out", out, source]
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
    elif p.seg == "spm":
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
                [source, *models[lang]], cpus=p.threads, title=f"{_segment_words(p.seg)} {split}.{lang}"))
    return steps


def summary(p: Preparation) -> str:
    """What the preparation printed at its end: the cleaning and each length filter's counts."""
    lines = [f"== {p.title} prepared in {p.work}", p.path("text", "clean.txt").read_text().rstrip("\n")]
    report = {f"len{n}": "filter.txt" for n in p.lens}
    if p.concat is not None:
        report.update({f"len{n}-concat": "concat.txt" for n in p.lens})
    report.update({band_folder(band): "filter.txt" for band in p.bands})
    for folder, name in report.items():
        lines.append(p.path(folder, name).read_text().rstrip("\n"))
        lines.append(f"   training data: {p.path('data-bin', folder)}  (shard0..shard{p.shards - 1}; "
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


def preparation_of(prep: Prepared, threads: int, on_change: str = "refuse", fetcher: Optional[Fetcher] = None,
                   **fields) -> Preparation:
    """A folder prepared before, as the Preparation that declares more steps in it (test sets,
    length bands, the concatenation augmentation), which need none of what it was made from."""
    return Preparation(work=prep.work, pair=prep.pair, src=prep.src, tgt=prep.tgt, title="", textproc=prep.textproc,
                       seg=prep.seg, seg_size=0, corpora=[], dev_sets=[], test_set="", lens=[], shards=1,
                       fetcher=fetcher or Fetcher(corpus=lambda p, name: [], testset=lambda p, name: []),
                       default_test_sets=[], bpe_vocab_threshold=prep.bpe_vocab_threshold, threads=threads,
                       on_change=on_change, **fields)


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

    def step(step_name, command, inputs, cpus: int = 1, title: str = "", log: Optional[Path] = None,
             identity: Optional[Sequence[str]] = None):
        steps.append(Step(step_name, command, home=folder, root=work, inputs=inputs, identity=identity,
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
    what = ["--source-lang", prep.src, "--target-lang", prep.tgt, "--testpref", folder / "seg",
            "--srcdict", dicts[0], "--tgtdict", dicts[1]]
    # the tool writes fairseq-preprocess's files byte for byte (tests/recipes/test_binarize.py)
    # without its 2 s of imports; the identity stays the command that binarized test sets
    # before, so that their folders are still done
    step("bin", [tool("binarize"), *what, "--destdir", Out(folder / "bin")], [*seg, *dicts],
         log=folder / "preprocess.log", title=f"{name}: binarize",
         identity=["fairseq-preprocess", *what, "--destdir", folder / "bin", "--workers", 1])
    step("meta", [tool("testset-meta"), "--dir", folder, "--name", name, "--pair", prep.pair,
                  "--src", prep.src, "--tgt", prep.tgt, "--out", Out(folder / "meta.env")],
         [*(folder / f"raw.{lang}" for lang in prep.langs), *seg, folder / "bin"], title=f"{name}: check")
    return steps


def testsets_graph(prep: Prepared, names: Sequence[str], fetch: Callable[[str], List[Step]],
                   threads: int) -> List[Step]:
    return unique_steps(*(testset_steps(prep, name, fetch, threads) for name in names))


def prepared_view(p: Preparation) -> Prepared:
    """The prepared folder as its test sets see it, before segmentation.env is written."""
    return Prepared(work=p.work, pair=p.pair, src=p.src, tgt=p.tgt, textproc=p.textproc, seg=p.seg,
                    bpe_vocab_threshold=p.bpe_vocab_threshold, default_sets=list(p.default_test_sets),
                    concat_of=p.concat_of)


def preparation_and_test_sets(p: Preparation, test_sets: Sequence[str], threads: Optional[int] = None) -> List[Step]:
    """The preparation's steps and those that build ``test_sets`` in it (with ``threads``
    workers; default: the preparation's)."""
    return unique_steps(preparation_steps(p), testsets_graph(prepared_view(p), test_sets,
                                                             lambda name: p.fetcher.testset(p, name),
                                                             p.threads if threads is None else threads))
