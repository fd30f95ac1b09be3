"""The command lines of the preparation scripts and build-test-sets.sh (their options and
--help are in the scripts).  Each declares its graph (graphs/data.py) and runs it."""
import argparse
import os
import re
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from relpos_analysis.buckets import check_bands
from relpos_analysis.io import InputError

from ..engine import Display, Graph, Job, Launch, Out, Step, StepError, manifest, run
from ..engine.step import REPO
from ..tools.user_corpus import MAX_OVERLAP, MalformedFile, Overlap, hold_out, overlaps, parallel_pairs
from ..tools.filter_pairs import BAND_SIDES
from . import PY, tool
from .data import (JOINED_SETS, Concat, Fetcher, HoldOut, Prepared, Preparation, corpus_fetcher, length_unit,
                   preparation_and_test_sets, preparation_of, read_env, refuse_foreign_work, split_fetcher, summary,
                   testsets_graph, wmt_fetcher)
from .options import Parser, absolute, add_threads, band_list, folder, log, name_list, non_negative_int, positive_int


def wmt_pair(pair: str) -> dict:
    """What the recipes need of a WMT19 pair (relpos_recipes.tools.wmt_sources.PAIRS): its languages,
    how the study prepares it, its corpora."""
    from ..tools.wmt_sources import PAIRS

    spec = PAIRS[pair]
    return dict(src=spec["src"], tgt=spec["tgt"], corpora=list(spec["corpora"]), **spec["preparation"])


def length_list(text: str) -> List[int]:
    if not text.strip():
        raise StepError("--max-len is empty (expected comma-separated lengths, e.g. 100,75)")
    lengths = []
    for part in text.split(","):
        if not part.strip().isdigit() or int(part) < 1:
            raise StepError(f"--max-len: expected positive integers separated by commas, got '{text}'")
        lengths.append(int(part))
    return lengths


def common_options(parser: Parser, seg_option: str, seg_default: int, default_work: Path, shards: int,
                   max_len: str) -> None:
    parser.add_argument("--work-dir", type=folder, default=default_work)
    parser.add_argument("--max-len", default=max_len)
    parser.add_argument(seg_option, dest="seg_size", type=positive_int, default=seg_default)
    parser.add_argument("--bpe-vocab-threshold", type=non_negative_int, default=50)
    parser.add_argument("--shards", type=positive_int, default=shards)
    parser.add_argument("--clean-ratio", type=_ratio, default="9")
    add_threads(parser)


def _ratio(text: str) -> str:
    try:
        if float(text) >= 1:
            return text
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"expected a length ratio of at least 1, got '{text}'")


def add_training_data_options(parser: Parser) -> None:
    """What a preparation keeps besides the pairs within each limit: length bands, and the
    limits' concatenation augmentation (deterministic from --seed)."""
    parser.add_argument("--train-band", type=band_list, action="append", default=[])
    parser.add_argument("--band-side", choices=BAND_SIDES, default="longer")
    parser.add_argument("--concat-augment", action="store_true")
    parser.add_argument("--concat-share", type=_share)


def _share(text: str) -> float:
    try:
        if 0 < float(text) <= 1:
            return float(text)
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"expected a share of the training pairs, above 0 and at most 1, got '{text}'")


def training_data_fields(args) -> dict:
    """The Preparation fields of add_training_data_options's options."""
    if args.concat_share is not None and not args.concat_augment:
        raise StepError("--concat-share is the share of --concat-augment: give both, or neither")
    bands = [band for group in args.train_band for band in group]
    try:
        check_bands(bands)  # those of several --train-band options together
    except InputError as err:
        raise StepError(f"--train-band: {err}") from None
    concat = Concat(share=args.concat_share or 1.0, seed=args.seed) if args.concat_augment else None
    return dict(bands=bands, band_side=args.band_side, concat=concat)


def run_preparation(p: Preparation, recipe: str, argv: Sequence[str], dry_run: bool,
                    test_sets: Sequence[str] = (), also: Sequence[Step] = ()) -> None:
    """The preparation's graph (and the ``test_sets``', and the steps ``also``), run; then its
    counts."""
    steps = [*preparation_and_test_sets(p, test_sets), *also]
    log(f"preparing {p.title} in {p.work} (max lengths: {', '.join(map(str, p.lens))})")
    run(Graph([Job("prepare", steps, kind="prepare")], roots=[p.work]),
        Launch(recipe, argv, dry_run=dry_run, threads=p.threads))
    if not dry_run:
        print(summary(p))
        print_testsets(p.work, test_sets)


# ----------------------------------------------------------------------------------------
# prepare-wmt19-de-en.sh / prepare-wmt19-zh-en.sh
# ----------------------------------------------------------------------------------------
def wmt_preparation(pair: str, args) -> Preparation:
    spec = wmt_pair(pair)
    corpora = name_list(args.corpora) if args.corpora.strip() else []
    if not corpora:
        raise StepError("--corpora is empty")
    unknown = [c for c in corpora if c not in spec["corpora"]]
    if unknown:
        raise StepError(f"--corpora: unknown corpus {', '.join(unknown)} for {pair} "
                        f"(known: {', '.join(spec['corpora'])})")
    return Preparation(work=absolute(args.work_dir), pair=pair, src=spec["src"], tgt=spec["tgt"], title=spec["title"],
                       textproc=spec["textproc"], seg=spec["seg"], seg_size=args.seg_size, corpora=corpora,
                       dev_sets=spec["dev_sets"], test_set=spec["test_set"], lens=length_list(args.max_len),
                       shards=args.shards, fetcher=wmt_fetcher([absolute(d) for d in args.local_dir], args.offline),
                       default_test_sets=spec["default_test_sets"], concat_of=spec["concat_of"],
                       clean_ratio=float(args.clean_ratio), bpe_vocab_threshold=args.bpe_vocab_threshold,
                       threads=args.threads)


def local_dir(text: str) -> Path:
    path = folder(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: no such directory")
    return path


def prepare_wmt(pair: str, argv: Sequence[str]) -> int:
    spec = wmt_pair(pair)
    parser = Parser(f"prepare-wmt19-{pair}.sh")
    common_options(parser, "--spm-vocab" if spec["seg"] == "spm" else "--bpe-merges", spec["seg_size"],
                   REPO / "work" / f"wmt19-{pair}", 8, "100")
    parser.add_argument("--local-dir", type=local_dir, action="append", default=[])
    parser.add_argument("--offline", action="store_true")
    parser.add_argument("--corpora", default=",".join(spec["corpora"]))
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    refuse_foreign_work(args.work_dir)
    run_preparation(wmt_preparation(pair, args), f"prepare-wmt19-{pair}", argv, args.dry_run)
    return 0


# ----------------------------------------------------------------------------------------
# prepare-toy.sh: the demo's synthetic pair
# ----------------------------------------------------------------------------------------
def word_range(text: str):
    parts = text.split()
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f'expected a word range "SHORTEST LONGEST", got \'{text}\'')
    return int(parts[0]), int(parts[1])


def toy_parser() -> Parser:
    parser = Parser("prepare-toy.sh")
    common_options(parser, "--bpe-merges", 400, REPO / "work" / "toy", 1, "50")
    parser.add_argument("--seed", type=non_negative_int, default=1)
    parser.add_argument("--train-pairs", type=positive_int, default=20000)
    parser.add_argument("--train-words", type=word_range, default=(12, 40))
    parser.add_argument("--dev-pairs", type=positive_int, default=300)
    parser.add_argument("--test-pairs", type=positive_int, default=300)
    parser.add_argument("--test-words", type=word_range, default=(12, 50))
    parser.add_argument("--dev-within-limit", action="store_true")
    add_training_data_options(parser)
    parser.add_argument("--dry-run", action="store_true")
    return parser


def toy_fetcher(seed: int, sizes: dict) -> Fetcher:
    """The generated corpora (relpos_recipes.tools.toy_corpus): training and dev sentences
    from ``seed`` and ``seed + 1000``, the longer test sentences from ``seed + 2000``."""

    def generate(p: Preparation, stem: str, pairs: int, gen_seed: int, words) -> List[Step]:
        prefix = p.path("orig", stem)
        out = Out(prefix, also=tuple(Path(f"{prefix}.{lang}") for lang in p.langs), prefix=True)
        command = [tool("toy-corpus"), "--lexicon-size", "small", "--src-lang", p.src, "--tgt-lang", p.tgt,
                   "--out-prefix", out, "--n", pairs, "--seed", gen_seed, "--min-words", words[0],
                   "--max-words", words[1]]
        return [p.step(f"orig.{stem}", command, title=f"generate {stem}")]

    def corpus(p, name):
        return generate(p, f"train.{name}", sizes["train"], seed, sizes["train_words"])

    def testset(p, name):
        generated = {"valid": (sizes["dev"], seed + 1000, sizes["train_words"]),
                     "test": (sizes["test"], seed + 2000, sizes["test_words"])}
        if name not in generated:
            return []
        return generate(p, name, *generated[name])

    return Fetcher(corpus=corpus, testset=testset)


def toy_preparation(args, work: Path, on_change: str = "refuse") -> Preparation:
    sizes = dict(train=args.train_pairs, dev=args.dev_pairs, test=args.test_pairs,
                 train_words=args.train_words, test_words=args.test_words)
    return Preparation(work=work, pair="toy", src="src", tgt="tgt", title="the synthetic pair", textproc="none",
                       seg="bpe", seg_size=args.seg_size, corpora=["toy"], dev_sets=["valid"], test_set="test",
                       lens=length_list(args.max_len), shards=args.shards, fetcher=toy_fetcher(args.seed, sizes),
                       default_test_sets=["test", "concat_seq"], concat_of="test",
                       clean_ratio=float(args.clean_ratio), bpe_vocab_threshold=args.bpe_vocab_threshold,
                       threads=args.threads, on_change=on_change, dev_within_limit=args.dev_within_limit,
                       **training_data_fields(args))


def prepare_toy(argv: Sequence[str]) -> int:
    args = toy_parser().parse_args(argv)
    refuse_foreign_work(args.work_dir)
    run_preparation(toy_preparation(args, absolute(args.work_dir)), "prepare-toy", argv, args.dry_run)
    return 0


# ----------------------------------------------------------------------------------------
# prepare-tatoeba.sh
# ----------------------------------------------------------------------------------------
def tatoeba_parser() -> Parser:
    parser = Parser("prepare-tatoeba.sh")
    parser.add_argument("--from", dest="source", type=Path)
    parser.add_argument("--download", action="store_true")
    parser.add_argument("--out-dir", "--work-dir", dest="work_dir", type=folder, default=REPO / "work" / "tatoeba-de-en")
    parser.add_argument("--seed", type=non_negative_int, default=1)
    parser.add_argument("--max-len", type=positive_int, default=16)
    parser.add_argument("--dev-pairs", type=positive_int, default=1000)
    parser.add_argument("--test-short-pairs", type=positive_int, default=2000)
    parser.add_argument("--bpe-merges", dest="seg_size", type=positive_int, default=10000)
    parser.add_argument("--clean-ratio", type=_ratio, default="9")
    add_training_data_options(parser)
    add_threads(parser)
    parser.add_argument("--dry-run", action="store_true")
    return parser


def tatoeba_export(args, fetch: bool = True) -> Path:
    """The export to prepare: --from, or --download's copy in WORK/raw (downloaded here when
    missing, unless ``fetch`` is False: a dry run, or a job whose data job fetched it)."""
    if not args.source and not args.download:
        raise StepError("--from FILE (deu.txt or deu-eng.zip) or --download is required (see --help)")
    if args.source and args.download:
        raise StepError("--from and --download exclude each other")
    if args.download:
        source = absolute(args.work_dir) / "raw" / "deu-eng.zip"
        if not source.exists() and fetch and not args.dry_run:
            source.parent.mkdir(parents=True, exist_ok=True)
            _tatoeba_tool("download", "--out", str(source))
        return source
    return absolute(args.source)


def tatoeba_pairs_sha(export: Path, dry_run: bool) -> str:
    """The export checked whole (a malformed line refused by file and line, before any work)
    and the sha256 of its pairs, which identifies the split."""
    if dry_run and not export.exists():
        return "(checked when it runs)"
    return _tatoeba_tool("check", "--from", str(export)).split()[-1]


def _tatoeba_tool(*argv: str) -> str:
    proc = subprocess.run([PY, "-m", "relpos_recipes.tools.tatoeba", *argv], stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.returncode)
    return proc.stdout


def tatoeba_preparation(args, export: Path, pairs_sha: str, on_change: str = "refuse",
                        dev_within_limit: bool = False) -> Preparation:
    work = absolute(args.work_dir)
    split_args = ["--seed", args.seed, "--max-len", args.max_len, "--dev-pairs", args.dev_pairs,
                  "--test-short-pairs", args.test_short_pairs]

    def split(p: Preparation, part: str) -> List[Step]:
        return [p.step("split", [tool("tatoeba"), "split", "--from", export, "--out-dir",
                                 Out(work / "split"), *split_args], [export],
                       identity=["tatoeba.py split", *map(str, split_args), "pairs sha256", pairs_sha],
                       title="split by sentence group")]

    return corpus_preparation(
        work, ("de", "en"), "Tatoeba German-English", "bpe", args.seg_size, [args.max_len],
        split_fetcher(split, {"valid": "dev", "test": "test"}), ["test"], ["test", "concat_seq", "concat3_seq"],
        corpus="tatoeba", clean_ratio=float(args.clean_ratio), threads=args.threads, on_change=on_change,
        dev_within_limit=dev_within_limit, **training_data_fields(args))


def prepare_tatoeba(argv: Sequence[str]) -> int:
    args = tatoeba_parser().parse_args(argv)
    refuse_foreign_work(args.work_dir, "--out-dir")
    export = tatoeba_export(args)
    p = tatoeba_preparation(args, export, tatoeba_pairs_sha(export, args.dry_run))
    run_preparation(p, "prepare-tatoeba", argv, args.dry_run, test_sets=p.default_test_sets)
    return 0


# ----------------------------------------------------------------------------------------
# prepare-corpus.sh: any parallel corpus
# ----------------------------------------------------------------------------------------
# --segmentation: (the text processing, the segmentation); "none": the files are tokenized
# already, and what the model reads and writes is their tokens
SEGMENTATIONS = {"bpe": ("moses", "bpe"), "spm": ("normalize", "spm"), "none": ("none", "none")}
SEGMENTATION_SIZES = {"bpe": 10000, "spm": 8000}  # --bpe-merges, --spm-vocab
# test set names the preparation gives a meaning of its own
RESERVED_NAMES = ("train", "dev", "valid", "newstest_all", *JOINED_SETS)
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def corpus_preparation(work: Path, langs: Tuple[str, str], title: str, segmentation: str, seg_size: int,
                       lens: Sequence[int], fetcher: Fetcher, test_sets: Sequence[str],
                       default_test_sets: Sequence[str], corpus: str = "corpus", **fields) -> Preparation:
    """A pair whose text is taken from WORK/split/ (a user's corpus, Tatoeba): ``segmentation``
    bpe (Moses tokenization, joint BPE), spm (punctuation normalisation, SentencePiece per
    language) or none (the text as it is, already tokenized); one training corpus, the dev set
    "valid", the first of ``test_sets`` binarized beside the training data and joined into
    concat_seq.  ``fields``: the Preparation's other fields."""
    textproc, seg = SEGMENTATIONS[segmentation]
    src, tgt = langs
    return Preparation(work=work, pair=f"{src}-{tgt}", src=src, tgt=tgt, title=title, textproc=textproc, seg=seg,
                       seg_size=seg_size, corpora=[corpus], dev_sets=["valid"], test_set=test_sets[0], lens=lens,
                       shards=1, fetcher=fetcher, default_test_sets=default_test_sets, concat_of=test_sets[0],
                       **fields)


def corpus_parser() -> Parser:
    parser = Parser("prepare-corpus.sh")
    parser.add_argument("--train", type=Path)
    parser.add_argument("--dev", type=Path)
    parser.add_argument("--test", action="append", default=[])
    parser.add_argument("--src-lang", type=_language)
    parser.add_argument("--tgt-lang", type=_language)
    parser.add_argument("--segmentation", choices=tuple(SEGMENTATIONS), default="bpe")
    parser.add_argument("--bpe-merges", type=positive_int)
    parser.add_argument("--spm-vocab", type=positive_int)
    parser.add_argument("--train-limit", type=positive_int)
    parser.add_argument("--out-dir", type=folder)
    parser.add_argument("--dev-pairs", type=positive_int)
    parser.add_argument("--dev-within-limit", action="store_true")
    parser.add_argument("--seed", type=non_negative_int, default=1)
    parser.add_argument("--clean-ratio", type=_ratio, default="9")
    parser.add_argument("--allow-overlap", action="store_true")
    add_training_data_options(parser)
    add_threads(parser)
    parser.add_argument("--dry-run", action="store_true")
    return parser


def _language(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", text):
        raise argparse.ArgumentTypeError(f"expected a language code, the files' suffix (e.g. de), got '{text}'")
    return text


def corpus_tests(specs: Sequence[str]) -> Dict[str, Path]:
    """--test NAME=PREFIX options, in order."""
    if not specs:
        raise StepError("--test NAME=PREFIX is required, at least once (see --help)")
    tests: Dict[str, Path] = {}
    for spec in specs:
        name, equals, prefix = spec.partition("=")
        if not (equals and prefix and NAME.fullmatch(name)):
            raise StepError(f"--test: expected NAME=PREFIX with a NAME of letters, digits, '_', '.' and '-', "
                            f"got '{spec}'")
        if name in RESERVED_NAMES or name.startswith(("newstest", "newsdev")):
            raise StepError(f"--test {spec}: the name {name} is taken (train, dev, valid, newstest_all, "
                            f"{', '.join(JOINED_SETS)} and newstest*/newsdev*, which build-test-sets.sh fetches, "
                            "have a meaning of their own); choose another")
        if name in tests:
            raise StepError(f"--test names {name} twice")
        tests[name] = absolute(Path(prefix))
    return tests


def corpus_args(args) -> Tuple[Dict[str, Path], int, Optional[HoldOut]]:
    """The checks of prepare-corpus.sh's options that need no file: the test sets, the size of
    the segmentation, the dev set's hold-out."""
    missing = [option for option, value in (("--train", args.train), ("--src-lang", args.src_lang),
                                            ("--tgt-lang", args.tgt_lang), ("--train-limit", args.train_limit),
                                            ("--out-dir", args.out_dir)) if value is None]
    if missing:
        raise StepError(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} required (see --help)")
    if args.src_lang == args.tgt_lang:
        raise StepError(f"--src-lang and --tgt-lang are both {args.src_lang}: the files PREFIX.SRC and PREFIX.TGT "
                        "need two suffixes")
    tests = corpus_tests(args.test)
    sizes = {"bpe": args.bpe_merges, "spm": args.spm_vocab}
    for segmentation, option in (("bpe", "--bpe-merges"), ("spm", "--spm-vocab")):
        if sizes[segmentation] is not None and args.segmentation != segmentation:
            raise StepError(f"{option} is for --segmentation {segmentation}, not {args.segmentation}")
    if args.dev and args.dev_pairs:
        raise StepError("--dev-pairs is the size of the dev set held out of --train; with --dev there is none")
    hold_out = None if args.dev else HoldOut(pairs=args.dev_pairs or 1000, max_len=args.train_limit, seed=args.seed)
    return tests, sizes.get(args.segmentation) or SEGMENTATION_SIZES.get(args.segmentation, 0), hold_out


def check_corpus_files(args, tests: Dict[str, Path], hold: Optional[HoldOut]) -> Dict[str, Overlap]:
    """Every file read and checked (relpos_recipes.tools.user_corpus), before any work; then each
    test set's overlap with the training pairs (those left when the dev set is held out),
    printed, and refused above MAX_OVERLAP unless --allow-overlap."""
    prefixes = [("--train", absolute(args.train))] + ([("--dev", absolute(args.dev))] if args.dev else [])
    prefixes += [(f"--test {name}", prefix) for name, prefix in tests.items()]
    read = {}
    for option, prefix in prefixes:
        files = [f"{prefix}.{lang}" for lang in (args.src_lang, args.tgt_lang)]
        try:
            read[option] = parallel_pairs(*files)
        except MalformedFile as err:
            raise StepError(f"{option} {prefix}: {err}") from None
        log(f"{option}: {len(read[option]):,} pairs in {files[0]} and {files[1]}")
    train = read["--train"]
    if hold is not None:  # the dev pairs the take step holds out are no training pairs
        units = (length_unit(args.src_lang), length_unit(args.tgt_lang))
        try:
            held = set(hold_out(train, hold.pairs, hold.max_len, units, hold.seed))
        except MalformedFile as err:
            raise StepError(f"--train {absolute(args.train)}: {err}") from None
        train = [pair for k, pair in enumerate(train) if k not in held]
    found = overlaps(train, {name: read[f"--test {name}"] for name in tests})
    for name, overlap in found.items():
        log(f"--test {name}: {overlap}")
    for name, overlap in found.items():
        if overlap.share > MAX_OVERLAP and not args.allow_overlap:
            raise StepError(f"--test {name} {tests[name]}: {overlap}, more than {MAX_OVERLAP:.0%}: its scores "
                            "would measure what the model memorised; take those pairs out of the test set or the "
                            "training data, or pass --allow-overlap to prepare it as it is")
    return found


def prepare_corpus(argv: Sequence[str]) -> int:
    args = corpus_parser().parse_args(argv)
    tests, seg_size, hold_out = corpus_args(args)
    fields = training_data_fields(args)
    refuse_foreign_work(args.out_dir, "--out-dir")
    overlap = check_corpus_files(args, tests, hold_out)
    train, dev = absolute(args.train), absolute(args.dev) if args.dev else None
    p = corpus_preparation(absolute(args.out_dir), (args.src_lang, args.tgt_lang), f"the corpus {train}",
                           args.segmentation, seg_size, [args.train_limit],
                           corpus_fetcher(train, dev, tests, hold_out), list(tests), [*tests, "concat_seq"],
                           clean_ratio=float(args.clean_ratio), threads=args.threads,
                           dev_within_limit=args.dev_within_limit, **fields)
    # what the test sets share with the training data, beside the preparation's other records
    # (redone, not refused, when the files change: it follows them)
    record = Step("overlap.env", [tool("write-env"), "--out", Out(p.path("overlap.env")),
                                  f"MAX_OVERLAP={MAX_OVERLAP}", f"ALLOW_OVERLAP={int(args.allow_overlap)}",
                                  *(f"TEST_{name}=pairs {o.pairs} sources {o.sources} of {o.total}"
                                    for name, o in overlap.items())],
                  home=p.work, display=Display(title="record the test sets' overlap with the training data"))
    run_preparation(p, "prepare-corpus", argv, args.dry_run, test_sets=p.default_test_sets, also=[record])
    return 0


def print_testsets(work: Path, names: Sequence[str]) -> None:
    for name in names:
        meta = read_env(work / "testsets" / name / "meta.env")
        print(f"{name}: {meta['LINES']} pairs -> {work / 'testsets' / name}")


# ----------------------------------------------------------------------------------------
# build-test-sets.sh
# ----------------------------------------------------------------------------------------
def recorded_sources(work: Path):
    """Where the preparation looked for its corpora: its fetch steps' manifests."""
    local_dirs, offline = [], False
    for path in sorted((work / ".steps").glob("orig.*.json")):
        record = manifest.read(path)
        local_dirs = [Path(record.command[k + 1]) for k, arg in enumerate(record.command[:-1]) if arg == "--search"]
        offline = "--offline" in record.command
    return local_dirs, offline


def build_test_sets(argv: Sequence[str]) -> int:
    parser = Parser("build-test-sets.sh")
    parser.add_argument("--work-dir", type=folder)
    parser.add_argument("--sets", type=name_list)
    parser.add_argument("--local-dir", type=local_dir, action="append", default=[])
    parser.add_argument("--offline", dest="offline", action="store_const", const=True)
    parser.add_argument("--online", dest="offline", action="store_const", const=False)
    add_threads(parser)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    if args.work_dir is None:
        raise StepError("--work-dir is required (see --help)")
    work = absolute(args.work_dir)
    if not (work / "segmentation.env").exists() or not (work / "dict").is_dir():
        raise StepError(f"{work} is not a prepared directory (run scripts/prepare-wmt19-*.sh first)")
    prep = Prepared.read(work)
    names = args.sets or prep.default_sets
    if not names:
        raise StepError(f"{work}/testsets.env names no default test sets; pass --sets")
    local_dirs, offline = recorded_sources(work)
    local_dirs = [absolute(d) for d in args.local_dir] or local_dirs
    offline = offline if args.offline is None else args.offline
    fetcher = wmt_fetcher(local_dirs, offline)
    stand_in = preparation_of(prep, args.threads, on_change="redo", fetcher=fetcher)
    steps = testsets_graph(prep, names, lambda name: fetcher.testset(stand_in, name), args.threads)
    run(Graph([Job("test-sets", steps, kind="prepare")], roots=[work]),
        Launch("build-test-sets", argv, dry_run=args.dry_run, threads=args.threads))
    if not args.dry_run:
        print_testsets(work, names)
    return 0


SMOKE_TATOEBA_PREPARE = ("--dev-pairs", "100", "--test-short-pairs", "100", "--bpe-merges", "500")


def smoke_tatoeba_export(args, smoke_data: Optional[Path]) -> Path:
    """SMOKE=1's Tatoeba export: SMOKE_DATA (``smoke_data``; by default ../shared's deu.txt),
    which replaces --from and --download."""
    if args.source or args.download:
        raise StepError("SMOKE=1 takes its data from SMOKE_DATA, not --from/--download")
    data = smoke_data or REPO.parent / "shared" / "data" / "tatoeba-deu-eng" / "deu.txt"
    if not data.is_file():
        raise StepError(f"SMOKE=1 needs the Tatoeba deu.txt; set SMOKE_DATA (tried {data})")
    return data


def smoke_slice(export: Path, slice_path: Path) -> Path:
    """Every 85th pair of the export, in WORK/raw where a preparation expects corpora placed
    beforehand (written by the recipe's command before its run, never by a job)."""
    slice_path.parent.mkdir(parents=True, exist_ok=True)
    with open(export, encoding="utf-8", newline="\n") as f:
        rows = [line for k, line in enumerate(f, start=1) if k % 85 == 0]
    temp = slice_path.with_name(f".tmp.{os.getpid()}.{slice_path.name}")
    temp.write_text("".join(rows), encoding="utf-8", newline="\n")
    if slice_path.exists() and slice_path.read_bytes() == temp.read_bytes():
        temp.unlink()
    else:
        os.replace(temp, slice_path)
    return slice_path
