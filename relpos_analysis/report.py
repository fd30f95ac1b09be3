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

from . import render, segment_scores
from .buckets import DEFAULT_EDGES, buckets_from_edges, limit_edges, parse_edges, quantile_edges
from .cache import StatisticsCache, default_directory
from .cli import (
    Parser, add_failure_options, add_length_side_options, check_oracles, check_outputs, every_system_or_none,
    length_side, run_command,
)
from .evaluate import PAIRED_TESTS, Lengths, ScoringOptions, check_baseline, evaluate_by_length
from .io import (
    InputError, check_parallel, existing_file, parse_named, read_lines, read_segments,
)
from .lengths import bpe_lengths, char_lengths, sentencepiece_lengths, whitespace_lengths
from .metrics import DEFAULT_METRICS, METRICS, TOKENIZERS, MetricConfig, parse_metrics
from .textcheck import check_no_subword_markers, check_segmented, check_segmented_form

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
    return run_command(build_parser, run, argv)


def run(args: argparse.Namespace) -> Tuple[str, Dict[Path, bytes]]:
    """Everything but the printing and writing: the markdown report and the output files."""
    # Cheap checks first, so that a typo fails before minutes of TER.
    targets = _output_targets(args)
    systems_files = parse_named(args.system, "--system", "NAME=FILE")
    names = [name for name, _ in systems_files]
    rows_files = systems_files + ([(REFERENCE_ROW, args.ref[1])] if _check_reference_baseline(args, names) else [])
    score_files = segment_scores.parse_specs(args.segment_scores, [name for name, _ in rows_files])
    seeds = {name: 1 for name in names}
    log_prob_files = {name: paths[0] for name, paths in
                      every_system_or_none(args.system_scores, "--system-scores", seeds, per_seed=False).items()}
    system_length_files = {name: paths[0] for name, paths in
                           every_system_or_none(args.system_lengths, "--system-lengths", seeds, per_seed=False).items()}
    oracles = check_oracles(parse_named(args.oracle_decoding, "--oracle-decoding", "ORACLE=FREE"), seeds)
    failures = dict(parse_named(args.failed, "--failed", "NAME=WHY"))
    check_outputs(_output_files(targets), _input_files(args, systems_files, score_files, log_prob_files,
                                                       system_length_files))
    metrics = parse_metrics(args.metrics)
    options = ScoringOptions(
        metrics=tuple(metrics), tokenize=args.tokenize, lowercase=args.lowercase, target_lang=args.target_lang,
        n_bootstrap=args.bootstrap, seed=args.seed, paired_test=args.paired_test, ar_trials=args.ar_trials,
        short_ratio=args.short_ratio, train_limit=args.train_limit, workers=args.workers)
    options.check()
    # BLEU and the failure columns count the tokens of BLEU's tokenizer
    bleu_tokenizer = _bleu_tokenizer(args)
    buckets = None
    if args.quantiles is None:
        default = DEFAULT_EDGES if args.train_limit is None else limit_edges(args.train_limit)
        edges = default if args.edges is None else parse_edges(args.edges)
        buckets = buckets_from_edges(edges)
    check_baseline(args.baseline, names)
    side = _length_side(args)
    for option, path in (("--bpe-codes", args.bpe_codes), ("--spm-model", args.spm_model)):
        if path:
            existing_file(path, option)
    cache = None if args.no_cache else StatisticsCache(args.cache_dir or default_directory())
    if cache is not None:
        cache.create()

    start_time = time.perf_counter()
    source = read_segments(args.source, "source", "--source")
    references = [read_segments(path, "reference", "--ref") for path in args.ref]
    systems = {name: read_segments(path, "system", f"--system {name}") for name, path in systems_files}
    # with --reference-baseline the second reference is a system, and the others are the references
    scoring_references = references
    if args.reference_baseline:
        systems[REFERENCE_ROW] = references[1]
        scoring_references = references[:1] + references[2:]
    length_lines = read_lines(args.length_file, "--length-file") if args.length_file else None
    reference_length_lines = (read_lines(args.reference_lengths, "--reference-lengths")
                              if args.reference_lengths else None)
    system_length_lines = {name: read_lines(path, f"--system-lengths {name}")
                           for name, path in system_length_files.items()}
    scores = {metric: {name: segment_scores.read_scores(paths[0], f"{segment_scores.OPTION} {metric}:{name}")
                       for name, paths in by_system.items()}
              for metric, by_system in score_files.items()}
    log_probs = {name: segment_scores.read_log_probs(path, f"--system-scores {name}")
                 for name, path in log_prob_files.items()}
    scored = list(zip(args.ref, references))
    scored += [(path, systems[name]) for name, path in systems_files]
    parallel = [(args.source, source)] + scored
    for path, lines in [(args.length_file, length_lines), (args.reference_lengths, reference_length_lines)]:
        if lines is not None:
            parallel.append((path, lines))
    parallel += [(system_length_files[name], lines) for name, lines in system_length_lines.items()]
    parallel += [(by_system[name][0], scores[metric][name])
                 for metric, by_system in score_files.items() for name in by_system]
    parallel += [(log_prob_files[name], values) for name, values in log_probs.items()]
    check_parallel(parallel)
    for name, lines in system_length_lines.items():
        check_segmented_form(system_length_files[name], lines, dict(systems_files)[name], systems[name],
                             f"--system-lengths {name}")
    if not args.allow_subwords:
        for path, segments in scored:
            check_no_subword_markers(path, segments)
    if args.tokenize is None and bleu_tokenizer == "13a":
        check_segmented(
            args.ref[0], references[0],
            "BLEU's 13a tokenizer would take whole clauses for words (BLEU and the failure columns "
            "count its tokens): pass --target-lang (zh, "
            "ja, ko: sacrebleu's tokenizer for that language) or --tokenize (e.g. char)",
        )
    if "ter" in metrics:
        check_segmented(
            args.ref[0], references[0],
            "TER would take whole clauses for words: leave it out (--metrics bleu,chrf)",
        )

    texts = LengthTexts(source, references[0], systems, length_lines, reference_length_lines, system_length_lines)
    lengths, length_label = _lengths(args, side, texts, rows_files, system_length_files)
    if buckets is None:
        pooled = [length for values in (lengths.values() if isinstance(lengths, dict) else [lengths])
                  for length in values]
        buckets = buckets_from_edges(quantile_edges(pooled, args.quantiles))
    if args.tokenize != "none":
        _warn_if_tokenized(systems)

    # stage lines with times on stderr, for reports big enough to take a while
    progress = _progress_line if len(source) * len(systems) >= PROGRESS_MIN_PAIRS else None
    if progress is not None:
        progress(f"inputs read: {len(source)} sentences, {len(systems)} systems, "
                 f"{time.perf_counter() - start_time:.1f} s")
    options = dataclasses.replace(options, cache=cache, progress=progress)
    report = evaluate_by_length(lengths, scoring_references, systems, buckets, options, baseline=args.baseline,
                                segment_scores=scores, log_probs=log_probs or None, oracles=oracles)
    report = dataclasses.replace(report, failed=failures,
                                 reference_row=REFERENCE_ROW if args.reference_baseline else None)
    start_time = time.perf_counter()
    markdown = render.markdown_table(report, args.title)
    outputs = _rendered_outputs(args, targets, report, markdown, length_label)
    if progress is not None:
        progress(f"outputs rendered: {time.perf_counter() - start_time:.1f} s")
    return markdown, outputs


def _rendered_outputs(args, targets, report, markdown, length_label) -> Dict[Path, bytes]:
    contents: Dict[Path, bytes] = {}
    renderers = {
        "markdown": lambda: markdown.encode("utf-8"),
        "json": lambda: render.json_text(report).encode("utf-8"),
        "csv": lambda: render.csv_text(report).encode("utf-8"),
        "latex": lambda: render.latex_table(report, args.title).encode("utf-8"),
    }
    plots = {"plot": render.bucket_plot, "failures_plot": render.failures_plot, "oracle_plot": render.oracle_plot}
    for kind, (_, path) in targets.items():
        if kind in renderers:
            contents[path] = renderers[kind]()
        elif kind in plots:
            for fmt, data in plots[kind](report, args.title, PLOT_FORMATS).items():
                contents[_with_format(path, fmt)] = data
    if "histogram" in targets:
        path = targets["histogram"][1]
        contents[path] = render.length_histogram(
            report.lengths, report.buckets, args.train_limit, args.title, length_label,
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


def _input_files(args, systems_files, score_files, log_prob_files, system_length_files) -> List[Tuple[str, Path]]:
    inputs = [("--source", args.source)] + [("--ref", path) for path in args.ref]
    inputs += [(f"--system {name}", path) for name, path in systems_files]
    inputs += [(option, getattr(args, option[2:].replace("-", "_")))
               for option in ("--length-file", "--reference-lengths", "--bpe-codes", "--spm-model")]
    inputs += [(f"{segment_scores.OPTION} {metric}:{name}", paths[0])
               for metric, by_system in score_files.items() for name, paths in by_system.items()]
    inputs += [(f"--system-scores {name}", path) for name, path in log_prob_files.items()]
    inputs += [(f"--system-lengths {name}", path) for name, path in system_length_files.items()]
    return [(option, Path(path)) for option, path in inputs if path]


def _with_format(prefix: Path, fmt: str) -> Path:
    return prefix.with_name(f"{prefix.name}.{fmt}")


@dataclass
class LengthTexts:
    """What lengths can be counted on: the texts, and the segmented files given for them."""
    source: List[str]
    reference: List[str]
    systems: Dict[str, List[str]]
    given: Optional[List[str]]  # --length-file
    reference_segmented: Optional[List[str]]  # --reference-lengths
    systems_segmented: Dict[str, List[str]]  # --system-lengths


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


def _lengths(args, side: str, texts: LengthTexts, systems_files, system_length_files) -> Tuple[Lengths, str]:
    """Each sentence's length (by hypothesis: each system's own lengths) and what they
    count, for the histogram's axis."""
    if side == "given":
        check_segmented(args.length_file, texts.given, "its whitespace tokens are no length: "
                        "give the segmented text (the subwords the system reads)")
        return whitespace_lengths(texts.given), f"length (tokens of {Path(args.length_file).name})"
    unit = _unit(args)
    if side == "source":
        return _count(args, args.source, texts.source), f"source length ({unit})"
    reference = (_segmented(args.reference_lengths, texts.reference_segmented) if args.reference_lengths
                 else _count(args, args.ref[0], texts.reference))
    reference_unit = f"tokens of {Path(args.reference_lengths).name}" if args.reference_lengths else unit
    if side == "reference":
        return reference, f"reference length ({reference_unit})"
    if side == "longer":
        source = _count(args, args.source, texts.source)
        return ([max(pair) for pair in zip(source, reference)],
                f"length of the longer side (source: {unit}; reference: {reference_unit})")
    files = dict(systems_files)
    if texts.systems_segmented:
        return ({name: _segmented(system_length_files[name], lines)
                 for name, lines in texts.systems_segmented.items()},
                "hypothesis length (whitespace tokens of the segmented translations)")
    return ({name: _count(args, files[name], hyps) for name, hyps in texts.systems.items()},
            f"hypothesis length ({unit}; each system its own)")


def _unit(args) -> str:
    if args.bpe_codes:
        return "BPE subwords"
    if args.spm_model:
        return "SentencePiece pieces"
    return "characters" if args.length_unit == "char" else "whitespace tokens"


def _segmented(path, lines: List[str]) -> List[int]:
    check_segmented(path, lines, "its whitespace tokens are no length: give the segmented text")
    return whitespace_lengths(lines)


def _count(args, path, text: List[str]) -> List[int]:
    """The lengths of ``text`` (from ``path``) in the unit the options choose."""
    if args.bpe_codes:
        return bpe_lengths(text, args.bpe_codes)
    if args.spm_model:
        return sentencepiece_lengths(text, args.spm_model)
    if args.length_unit == "char":
        return char_lengths(text)
    check_segmented(path, text, "its whitespace tokens are no length: count its subwords with "
                    "--spm-model or --bpe-codes, give them with --length-file, or count "
                    "characters with --length-unit char")
    return whitespace_lengths(text)


def _bleu_tokenizer(args) -> str:
    """The name sacrebleu gives the BLEU tokenizer of these options; before the scoring,
    so that a missing extra package (MeCab for ja and ko) is an error now."""
    config = MetricConfig("bleu", args.tokenize, args.lowercase, args.target_lang)
    try:
        return config.build().tokenizer_signature
    except (RuntimeError, ImportError, OSError) as err:
        option = "--tokenize" if args.tokenize else "--target-lang"
        raise InputError(f"BLEU's tokenizer for {option} {args.tokenize or args.target_lang} is "
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
