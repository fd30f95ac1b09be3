"""The command lines of the preparation scripts and build-test-sets.sh (their options and
--help are in the scripts).  Each declares its graph (graphs/data.py) and runs it."""
import argparse
import os
import subprocess
from pathlib import Path
from typing import List, Sequence

from ..engine import Graph, Job, Launch, Out, Step, StepError, manifest, run, unique_steps
from ..engine.step import REPO
from . import PY, tool
from .data import (Fetcher, Prepared, Preparation, preparation_steps, read_env, refuse_foreign_work, summary,
                   testsets_graph, wmt_fetcher)
from .options import Parser, absolute, add_threads, folder, log, name_list, non_negative_int, positive_int


def wmt_pair(pair: str) -> dict:
    """What the recipes need of a WMT19 pair (relpos_recipes.tools.corpora.PAIRS): its languages,
    how the study prepares it, its corpora."""
    from ..tools.corpora import PAIRS

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


def run_preparation(p: Preparation, recipe: str, argv: Sequence[str], dry_run: bool,
                    extra_steps: Sequence[Step] = ()) -> None:
    steps = unique_steps(list(extra_steps), preparation_steps(p))
    log(f"preparing {p.title} in {p.work} (max lengths: {', '.join(map(str, p.lens))})")
    run(Graph([Job("prepare", steps, kind="prepare")], roots=[p.work]),
        Launch(recipe, argv, dry_run=dry_run, threads=p.threads))
    if not dry_run:
        print(summary(p))


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
                       threads=args.threads, on_change=on_change, dev_within_limit=args.dev_within_limit)


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
    split_files = {name: [work / "split" / f"{name}.{lang}" for lang in ("de", "en")] for name in ("train", "dev", "test")}

    def split(p: Preparation) -> List[Step]:
        return [p.step("split", [tool("tatoeba"), "split", "--from", export, "--out-dir",
                                 Out(work / "split"), *split_args], [export],
                       identity=["tatoeba.py split", *map(str, split_args), "pairs sha256", pairs_sha],
                       title="split by sentence group")]

    def copy(p: Preparation, split_name: str, stem: str) -> List[Step]:
        steps = split(p)
        for lang, source in zip(("de", "en"), split_files[split_name]):
            steps.append(p.step(f"orig.{stem}.{lang}", [tool("textproc"), "--mode", "none", "--lang", lang, "--out",
                                                        Out(p.path("orig", f"{stem}.{lang}")), source], [source],
                                title=f"take {stem}.{lang}"))
        return steps

    splits = {"valid": "dev", "test": "test"}
    fetcher = Fetcher(corpus=lambda p, name: copy(p, "train", f"train.{name}"),
                      testset=lambda p, name: copy(p, splits[name], name) if name in splits else [])
    return Preparation(work=work, pair="de-en", src="de", tgt="en", title="Tatoeba German-English", textproc="moses",
                       seg="bpe", seg_size=args.seg_size, corpora=["tatoeba"], dev_sets=["valid"], test_set="test",
                       lens=[args.max_len], shards=1, fetcher=fetcher,
                       default_test_sets=["test", "concat_seq", "concat3_seq"], concat_of="test",
                       clean_ratio=float(args.clean_ratio), threads=args.threads, on_change=on_change,
                       dev_within_limit=dev_within_limit)


def prepare_tatoeba(argv: Sequence[str]) -> int:
    args = tatoeba_parser().parse_args(argv)
    refuse_foreign_work(args.work_dir)
    export = tatoeba_export(args)
    p = tatoeba_preparation(args, export, tatoeba_pairs_sha(export, args.dry_run))
    log(f"preparing {p.title} in {p.work} (max length {args.max_len})")
    steps = unique_steps(preparation_steps(p), testsets_graph_for(p, p.default_test_sets))
    run(Graph([Job("prepare", steps, kind="prepare")], roots=[p.work]),
        Launch("prepare-tatoeba", argv, dry_run=args.dry_run, threads=p.threads))
    if not args.dry_run:
        print(summary(p))
        print_testsets(p.work, p.default_test_sets)
    return 0


def prepared_view(p: Preparation) -> Prepared:
    """The prepared folder as its test sets see it, before segmentation.env is written."""
    return Prepared(work=p.work, pair=p.pair, src=p.src, tgt=p.tgt, textproc=p.textproc, seg=p.seg,
                    bpe_vocab_threshold=p.bpe_vocab_threshold, default_sets=list(p.default_test_sets),
                    concat_of=p.concat_of)


def testsets_graph_for(p: Preparation, names: Sequence[str]) -> List[Step]:
    return testsets_graph(prepared_view(p), names, lambda name: p.fetcher.testset(p, name), p.threads)


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
    stand_in = Preparation(work=work, pair=prep.pair, src=prep.src, tgt=prep.tgt, title="", textproc=prep.textproc,
                           seg=prep.seg, seg_size=0, corpora=[], dev_sets=[], test_set="", lens=[], shards=1,
                           fetcher=fetcher, default_test_sets=[], threads=args.threads, on_change="redo")
    steps = testsets_graph(prep, names, lambda name: fetcher.testset(stand_in, name), args.threads)
    run(Graph([Job("test-sets", steps, kind="prepare")], roots=[work]),
        Launch("build-test-sets", argv, dry_run=args.dry_run, threads=args.threads))
    if not args.dry_run:
        print_testsets(work, names)
    return 0


SMOKE_TATOEBA_PREPARE = ("--dev-pairs", "100", "--test-short-pairs", "100", "--bpe-merges", "500")


def smoke_tatoeba_export(args) -> Path:
    """SMOKE=1's Tatoeba export: SMOKE_DATA (by default ../shared's deu.txt), which replaces
    --from and --download."""
    if args.source or args.download:
        raise StepError("SMOKE=1 takes its data from SMOKE_DATA, not --from/--download")
    data = Path(os.environ.get("SMOKE_DATA", REPO.parent / "shared" / "data" / "tatoeba-deu-eng" / "deu.txt"))
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
