"""Per-length-bucket BLEU, TER and chrF of several systems: the study's Table 2 in one command.

    python -m relpos_analysis.report --source newstest.src --ref newstest.ref \\
        --system abs=abs.hyp --system rel=rel.hyp --baseline abs --out-dir report/

The files are written when everything is computed (under temporary names, then renamed,
all or nothing), then the markdown table goes to stdout.  Bad input is a one-line
``error: ...`` on stderr and exit status 2, and every check that needs no scores (options,
output paths, input files) comes before the scoring.
"""
import argparse
import dataclasses
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from . import report_render, segment_scores
from .buckets import Bucket, buckets_from_edges, default_edges, parse_edges, quantile_edges
from .cache import StatisticsCache, default_directory
from .cli import (
    Parser, add_failure_options, add_length_side_options, check_outputs, every_system_or_none,
    length_side, run_command,
)
from .report_model import (PAIRED_TESTS, ScoringOptions, bleu_tokenizer, check_baseline, check_oracles,
                           evaluate_by_length)
from .inputs import InputFiles, LengthCounting, Text, lengths_by_side, read_inputs
from .io import InputError, existing_file, parse_named
from .metrics import DEFAULT_METRICS, METRICS, TOKENIZERS, parse_metrics
from .textcheck import check_segmented

OUT_DIR_NAMES = {
    "markdown": "report.md",
    "json": "report.json",
    "csv": "report.csv",
    "latex": "report.tex",
    "plot": "buckets",  # prefix of buckets.png and buckets.pdf
    "failures_plot": "failures",
    "oracle_plot": "oracle",
    "histogram": "lengths.png",
}
PLOT_FORMATS = ("png", "pdf")
PLOTS = ("plot", "failures_plot", "oracle_plot")  # the outputs written as PREFIX.png and PREFIX.pdf
HISTOGRAM_FORMATS = ("png", "pdf", "svg")
# sacrebleu's rule for "this looks tokenized" (metrics.py switches its own check off).
_TOKENIZED_LINES_WARNING = 100
# Sentence x system pairs from which a report prints its stages (a few seconds' work).
PROGRESS_MIN_PAIRS = 10_000
# the row of --reference-baseline: the second reference, scored as a system
REFERENCE_ROW = "reference-2"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="relpos-report",
        description="BLEU, TER and chrF of several systems per source-length bucket, with "
        "bootstrap confidence intervals and paired significance tests against a baseline.",
    )
    inputs = parser.add_argument_group(
        "inputs (plain text, one sentence per line, or fairseq-generate output)"
    )
    inputs.add_argument("--source", required=True,
                        help="source sentences; their whitespace tokens give the length J")
    inputs.add_argument("--ref", action="append", required=True, metavar="REF",
                        help="reference translations; repeat for multiple references")
    inputs.add_argument("--system", action="append", required=True, metavar="NAME=FILE",
                        help="a system's translations; repeat for each system")
    inputs.add_argument("--failed", action="append", default=[], metavar="NAME=WHY",
                        help="a system that could not be scored (its training or translation failed) "
                             "and why: listed under the table")
    inputs.add_argument("--baseline", metavar="NAME",
                        help="the system the others are tested against (default: the first)")
    inputs.add_argument("--segment-scores", action="append", default=[],
                        metavar="NAME:SYSTEM=FILE",
                        help="a metric computed elsewhere (e.g. COMET): FILE has SYSTEM's score of "
                        "each sentence, one per line; scored per bucket as their mean, with the "
                        "same intervals and tests; repeat for every system")
    inputs.add_argument("--reference-baseline", action="store_true",
                        help=f"score the second --ref as one more system, {REFERENCE_ROW!r}, against the other "
                        "references (the systems too): a human translation's score per bucket, which says how "
                        "much of a drop by length is the metric's own; a metric whose row worsens by more than "
                        "5%% from the shortest bucket to the longest is flagged. With --segment-scores, give "
                        f"its scores as a system's (NAME:{REFERENCE_ROW}=FILE)")
    add_failure_options(inputs, per_seed=False)
    inputs.add_argument("--allow-subwords", action="store_true",
                        help="score references and translations that still carry BPE ('@@ ') or "
                        "SentencePiece markers as they are (refused otherwise)")

    lengths = parser.add_argument_group("lengths and buckets")
    length_source = lengths.add_mutually_exclusive_group()
    length_source.add_argument("--length-file", metavar="F",
                               help="lengths from the whitespace tokens of F, e.g. the BPE-segmented "
                               "source")
    length_source.add_argument("--bpe-codes", metavar="F",
                               help="segment with these subword-nmt BPE codes and count subwords")
    length_source.add_argument("--spm-model", metavar="F",
                               help="segment with this SentencePiece model and count pieces")
    lengths.add_argument("--length-unit", choices=("token", "char"), default="token",
                         help="token: whitespace tokens (default); char: characters other than "
                         "whitespace, for unsegmented Chinese, Japanese, Thai, ... text")
    lengths.add_argument("--by-reference-length", action="store_true",
                         help="the same as --length-by reference")
    add_length_side_options(lengths, per_seed=False)
    edges = lengths.add_mutually_exclusive_group()
    edges.add_argument("--edges", metavar="E1,E2,...",
                       help="inclusive upper ends of the buckets (default: with --train-limit N, N, 1.5N, "
                       "2N and 3N; otherwise the study's 25,50,75,100); 'none': a single bucket")
    edges.add_argument("--quantiles", type=int, metavar="N",
                       help="N buckets of (nearly) equal size instead")
    lengths.add_argument("--train-limit", type=int, metavar="N",
                         help="the training-length limit: marked in the histogram, and each bucket "
                         "entirely beyond it is compared with every sentence within it (its drop, "
                         "with a 95%% interval)")

    scoring = parser.add_argument_group("scoring (sacrebleu)")
    scoring.add_argument("--metrics", default=",".join(DEFAULT_METRICS),
                         help=f"comma-separated subset of {','.join(METRICS)} (default: {','.join(DEFAULT_METRICS)}); "
                         "exact: the share of translations equal to a reference (whitespace tokens), SCAN's measure")
    scoring.add_argument("--target-lang", metavar="LANG", default="",
                         help="language code of the translations: BLEU's tokenizer is then "
                         "sacrebleu's for it (zh: zh, ja: ja-mecab, ko: ko-mecab, others: 13a)")
    scoring.add_argument("--tokenize", choices=TOKENIZERS, metavar="TOK",
                         help="BLEU tokenizer (default: 13a, or the one for --target-lang): none "
                         "(pre-tokenized text, as in the study), "
                         f"{', '.join(t for t in TOKENIZERS if t != 'none')}")
    scoring.add_argument("--lowercase", action="store_true", help="case-insensitive BLEU and chrF")
    scoring.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                         help="bootstrap resamples for the 95%% intervals and the paired bootstrap "
                         "test (default: 1000; 0: none)")
    scoring.add_argument("--paired-test", choices=PAIRED_TESTS, default="bs",
                         help="bs: paired bootstrap resampling (default), ar: approximate "
                         "randomization")
    scoring.add_argument("--ar-trials", type=int, default=10000, metavar="N",
                         help="trials of the ar test (default: 10000)")
    scoring.add_argument("--seed", type=int, default=12345,
                         help="seed of the resampling (default: 12345, as in sacrebleu)")
    scoring.add_argument("--workers", type=int, default=2,
                         help="processes computing sentence statistics (default: 2)")
    cache = scoring.add_mutually_exclusive_group()
    cache.add_argument("--cache-dir", metavar="DIR",
                       help="where sentence statistics are kept between reports (default: "
                       "$RELPOS_CACHE_DIR or ~/.cache/fairseq-relpos/statistics)")
    cache.add_argument("--no-cache", action="store_true",
                       help="compute every statistic afresh and store none")

    outputs = parser.add_argument_group("outputs (the markdown table always goes to stdout)")
    outputs.add_argument("--out-dir", metavar="DIR",
                         help="write report.md/.json/.csv/.tex, buckets.png/.pdf, failures.png/.pdf, "
                         "oracle.png/.pdf and lengths.png")
    outputs.add_argument("--json", metavar="P", help="one record per (system, bucket)")
    outputs.add_argument("--csv", metavar="P", help="the same records as CSV")
    outputs.add_argument("--latex", metavar="P", help="the table for a paper")
    outputs.add_argument("--plot", metavar="PREFIX",
                         help="score per bucket with 95%% intervals: PREFIX.png and PREFIX.pdf")
    outputs.add_argument("--failures-plot", metavar="PREFIX",
                         help="the failure shares stacked per bucket, a panel per system: PREFIX.png "
                         "and PREFIX.pdf")
    outputs.add_argument("--oracle-plot", metavar="PREFIX",
                         help="free against oracle-length decoding per bucket, a panel per system: "
                         "PREFIX.png and PREFIX.pdf")
    outputs.add_argument("--histogram", metavar="P", help="length histogram (.png, .pdf or .svg)")
    outputs.add_argument("--title", metavar="T", help="title of the tables and plots")
    return parser


def main(argv=None) -> int:
    return run_command(build_parser, ReportRequest.from_args, run, argv)


@dataclass(frozen=True)
class ReportRequest:
    """A report as the command line asks for it, parsed and checked before any input is read."""
    files: InputFiles
    targets: Dict[str, Tuple[str, Path]]  # output kind -> (the option that names it, its path)
    options: ScoringOptions  # without cache and progress, which run adds
    baseline: Optional[str]
    failures: Dict[str, str]
    oracles: Dict[str, str]
    reference_baseline: bool
    allow_subwords: bool
    side: str  # cli.LENGTH_SIDES, or "given" for --length-file
    counting: LengthCounting
    buckets: Optional[List[Bucket]]  # None: --quantiles, from the lengths
    quantiles: Optional[int]
    tokenize: Optional[str]
    bleu_tokenizer: str  # sacrebleu's name of BLEU's tokenizer: the failure columns count its tokens
    cache_dir: Optional[str]  # None: no cache
    title: Optional[str]

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "ReportRequest":
        # Cheap checks first, so that a typo fails before minutes of TER.
        targets = _output_targets(args)
        systems_files = parse_named(args.system, "--system", "NAME=FILE")
        names = [name for name, _ in systems_files]
        reference_baseline = _check_reference_baseline(args, names)
        rows = names + ([REFERENCE_ROW] if reference_baseline else [])
        score_files = segment_scores.parse_specs(args.segment_scores, rows)
        seeds = {name: 1 for name in names}
        files = InputFiles(
            source=args.source, references=tuple(args.ref),
            systems={name: (path,) for name, path in systems_files},
            length_file=args.length_file, reference_lengths=args.reference_lengths,
            segment_scores={metric: {name: tuple(paths) for name, paths in by_system.items()}
                            for metric, by_system in score_files.items()},
            log_probs={name: tuple(paths) for name, paths in
                       every_system_or_none(args.system_scores, "--system-scores", seeds, per_seed=False).items()},
            system_lengths={name: tuple(paths) for name, paths in
                            every_system_or_none(args.system_lengths, "--system-lengths", seeds, per_seed=False).items()},
            extra=(("--bpe-codes", args.bpe_codes), ("--spm-model", args.spm_model)),
        )
        oracles = check_oracles(dict(parse_named(args.oracle_decoding, "--oracle-decoding", "ORACLE=FREE")), seeds,
                                "--oracle-decoding", "--system")
        failures = dict(parse_named(args.failed, "--failed", "NAME=WHY"))
        check_outputs(_output_files(targets), files.named())
        options = ScoringOptions(
            metrics=tuple(parse_metrics(args.metrics)), tokenize=args.tokenize, lowercase=args.lowercase,
            target_lang=args.target_lang, n_bootstrap=args.bootstrap, seed=args.seed, paired_test=args.paired_test,
            ar_trials=args.ar_trials, short_ratio=args.short_ratio, train_limit=args.train_limit,
            workers=args.workers)
        options.check()
        tokenizer = _bleu_tokenizer(options)
        buckets = None if args.quantiles is not None else buckets_from_edges(
            default_edges(args.train_limit) if args.edges is None else parse_edges(args.edges))
        check_baseline(args.baseline, names)
        side = _length_side(args)
        for option, path in (("--bpe-codes", args.bpe_codes), ("--spm-model", args.spm_model)):
            if path:
                existing_file(path, option)
        return cls(
            files=files, targets=targets, options=options, baseline=args.baseline, failures=failures,
            oracles=oracles, reference_baseline=reference_baseline, allow_subwords=args.allow_subwords, side=side,
            counting=LengthCounting(_UNSEGMENTED_TEXT, args.bpe_codes, args.spm_model, args.length_unit),
            buckets=buckets, quantiles=args.quantiles, tokenize=args.tokenize, bleu_tokenizer=tokenizer,
            cache_dir=None if args.no_cache else args.cache_dir or default_directory(), title=args.title,
        )


# what a text whose whitespace tokens are no length is told
_UNSEGMENTED_TEXT = ("its whitespace tokens are no length: count its subwords with --spm-model or --bpe-codes, "
                     "give them with --length-file, or count characters with --length-unit char")
_UNSEGMENTED_FILE = "its whitespace tokens are no length: give the segmented text (the subwords the system reads)"


def run(request: ReportRequest) -> Tuple[str, Dict[Path, bytes]]:
    """Everything but the printing and writing: the markdown report and the output files."""
    cache = None if request.cache_dir is None else StatisticsCache(request.cache_dir)
    if cache is not None:
        cache.create()
    start_time = time.perf_counter()
    texts = read_inputs(request.files, request.allow_subwords)
    _check_tokenization(request, texts.references[0])
    # with --reference-baseline the second reference is a system, and the others are the references
    references = [text.lines for text in texts.references]
    if request.reference_baseline:
        texts = dataclasses.replace(texts, systems=dict(texts.systems, **{REFERENCE_ROW: [texts.references[1]]}))
        references = references[:1] + references[2:]
    systems = {name: seeds[0].lines for name, seeds in texts.systems.items()}
    lengths, length_label = lengths_by_side(request.side, texts, request.counting, _UNSEGMENTED_FILE)
    if isinstance(lengths, dict):
        lengths = {name: seeds[0] for name, seeds in lengths.items()}
    buckets = request.buckets
    if buckets is None:
        pooled = [length for values in (lengths.values() if isinstance(lengths, dict) else [lengths])
                  for length in values]
        buckets = buckets_from_edges(quantile_edges(pooled, request.quantiles))
    if request.tokenize != "none":
        _warn_if_tokenized(systems)

    # stage lines with times on stderr, for reports big enough to take a while
    n_sentences = len(texts.source.lines)
    progress = _progress_line if n_sentences * len(systems) >= PROGRESS_MIN_PAIRS else None
    if progress is not None:
        progress(f"inputs read: {n_sentences} sentences, {len(systems)} systems, "
                 f"{time.perf_counter() - start_time:.1f} s")
    options = dataclasses.replace(request.options, cache=cache, progress=progress)
    report = evaluate_by_length(lengths, references, systems, buckets, options, baseline=request.baseline,
                                segment_scores={metric: {name: seeds[0] for name, seeds in by_system.items()}
                                                for metric, by_system in texts.segment_scores.items()},
                                log_probs={name: seeds[0] for name, seeds in texts.log_probs.items()} or None,
                                oracles=request.oracles)
    report = dataclasses.replace(report, failed=request.failures,
                                 reference_row=REFERENCE_ROW if request.reference_baseline else None)
    start_time = time.perf_counter()
    markdown = report_render.markdown_table(report, request.title)
    outputs = _rendered_outputs(request, report, markdown, length_label)
    if progress is not None:
        progress(f"outputs rendered: {time.perf_counter() - start_time:.1f} s")
    return markdown, outputs


def _check_tokenization(request: ReportRequest, reference: Text) -> None:
    """Refuse a reference that BLEU's 13a tokenizer or TER would split into whole clauses."""
    if request.tokenize is None and request.bleu_tokenizer == "13a":
        check_segmented(
            reference.path, reference.lines,
            "BLEU's 13a tokenizer would take whole clauses for words (BLEU and the failure columns "
            "count its tokens): pass --target-lang (zh, "
            "ja, ko: sacrebleu's tokenizer for that language) or --tokenize (e.g. char)",
        )
    if "ter" in request.options.metrics:
        check_segmented(
            reference.path, reference.lines,
            "TER would take whole clauses for words: leave it out (--metrics bleu,chrf)",
        )


def _rendered_outputs(request: ReportRequest, report, markdown, length_label) -> Dict[Path, bytes]:
    contents: Dict[Path, bytes] = {}
    title = request.title
    renderers = {
        "markdown": lambda: markdown.encode("utf-8"),
        "json": lambda: report_render.json_text(report).encode("utf-8"),
        "csv": lambda: report_render.csv_text(report).encode("utf-8"),
        "latex": lambda: report_render.latex_table(report, title).encode("utf-8"),
    }
    plots = {"plot": report_render.bucket_plot, "failures_plot": report_render.failures_plot,
             "oracle_plot": report_render.oracle_plot}
    for kind, (_, path) in request.targets.items():
        if kind in renderers:
            contents[path] = renderers[kind]()
        elif kind in plots:
            for fmt, data in plots[kind](report, title, PLOT_FORMATS).items():
                contents[_with_format(path, fmt)] = data
    if "histogram" in request.targets:
        path = request.targets["histogram"][1]
        contents[path] = report_render.length_histogram(
            report.lengths, report.buckets, request.options.train_limit, title, length_label,
            fmt=path.suffix[1:].lower(),
        )
    return contents


def _check_reference_baseline(args, names: List[str]) -> bool:
    """Whether the report has --reference-baseline's row, after refusing what it cannot go with."""
    if not args.reference_baseline:
        return False
    if len(args.ref) < 2:
        raise InputError("--reference-baseline scores the second --ref against the first: give two or more --ref")
    if REFERENCE_ROW in names:
        raise InputError(f"--system {REFERENCE_ROW}: the name of --reference-baseline's row; name the system otherwise")
    given = [option for option, value in (("--system-scores", args.system_scores),
                                          ("--system-lengths", args.system_lengths)) if value]
    if given:
        raise InputError(f"--reference-baseline: a reference has no {given[0]}; drop one of them")
    return True


def _output_targets(args) -> Dict[str, Tuple[str, Path]]:
    """Output kind -> (the option that names it, its path): --out-dir's defaults,
    overridden by the individual flags."""
    targets = {}
    if args.out_dir:
        targets = {kind: (f"--out-dir ({name})", Path(args.out_dir) / name)
                   for kind, name in OUT_DIR_NAMES.items()}
    for kind in ("json", "csv", "latex") + PLOTS + ("histogram",):
        if getattr(args, kind):
            targets[kind] = (f"--{kind.replace('_', '-')}", Path(getattr(args, kind)))
    for kind in PLOTS:
        if kind in targets and targets[kind][1].suffix.lower()[1:] in PLOT_FORMATS:
            # a prefix given with an extension
            targets[kind] = (targets[kind][0], targets[kind][1].with_suffix(""))
    if "histogram" in targets and targets["histogram"][1].suffix.lower()[1:] not in HISTOGRAM_FORMATS:
        raise InputError(f"--histogram needs a .png, .pdf or .svg path, got {targets['histogram'][1]}")
    return targets


def _output_files(targets) -> List[Tuple[str, Path]]:
    """(option, path) of every file the targets make: a plot is one per format."""
    files = []
    for kind, (option, path) in targets.items():
        paths = [_with_format(path, fmt) for fmt in PLOT_FORMATS] if kind in PLOTS else [path]
        files += [(option, path) for path in paths]
    return files


def _with_format(prefix: Path, fmt: str) -> Path:
    return prefix.with_name(f"{prefix.name}.{fmt}")


def _length_side(args) -> str:
    """The side --length-by, --by-reference-length or --length-file measure, after the
    checks that need no input read."""
    if args.by_reference_length and args.length_by not in (None, "reference"):
        raise InputError(f"--by-reference-length is --length-by reference; drop one of it and "
                         f"--length-by {args.length_by}")
    if args.length_file and args.by_reference_length:
        raise InputError("--length-file already gives the lengths; drop --by-reference-length")
    side = length_side(args, "given" if args.length_file
                       else "reference" if args.by_reference_length else args.length_by or "source")
    if args.workers < 1:
        raise InputError("--workers must be at least 1")
    length_options = {"--length-file": args.length_file, "--bpe-codes": args.bpe_codes,
                      "--spm-model": args.spm_model}
    given = [f"{option} {value}" for option, value in length_options.items() if value]
    if args.length_unit == "char" and given:
        raise InputError(f"--length-unit char counts the characters of the text itself; "
                         f"drop {given[0]}")
    return side


def _bleu_tokenizer(options: ScoringOptions) -> str:
    """The name sacrebleu gives the BLEU tokenizer of these options; before the scoring,
    so that a missing extra package (MeCab for ja and ko) is an error now."""
    try:
        return bleu_tokenizer(options).tokenizer_signature
    except (RuntimeError, ImportError, OSError) as err:
        option = "--tokenize" if options.tokenize else "--target-lang"
        raise InputError(f"BLEU's tokenizer for {option} {options.tokenize or options.target_lang} is "
                         f"not available: {' '.join(str(err).split())}") from None


def _progress_line(line: str) -> None:
    print(f"[relpos-report] {line}", file=sys.stderr, flush=True)


def _warn_if_tokenized(systems: Dict[str, List[str]]) -> None:
    for name, hyps in systems.items():
        tokenized = sum(hyp.endswith(" .") for hyp in hyps)
        if tokenized >= _TOKENIZED_LINES_WARNING:
            print(f"warning: {tokenized} lines of {name} end in a tokenized period; "
                  "pass --tokenize none if the text is tokenized on purpose", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
