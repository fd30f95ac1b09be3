"""The length-generalization leaderboard: systems trained with several seeds, ranked by BLEU
beyond the training lengths among those that learned the task within them, with BLEU, TER
and the length ratio per bucket as mean ± spread.

    python -m relpos_analysis.leaderboard --source test.src --length-file test.len --ref test.ref \\
        --system abs=abs.s1.hyp,abs.s2.hyp --system rel=rel.s1.hyp,rel.s2.hyp \\
        --train-log abs=abs.s1/train.log,abs.s2/train.log --failed huang3="seed 2: diverged" \\
        --tuning tuning.json --baseline abs --train-limit 50 --edges 50,75,100 --out-dir board/

Writes board.md (also printed), board.json, board.csv, board.tex, bleu.png,
length_ratio.png, failures.png and oracle.png, all or nothing, when everything is computed.  A baseline that failed on
every seed (named only by --failed) is on the board, which then has no paired tests.  Bad
input is a one-line ``error: ...`` on stderr and exit status 2, before any scoring.
"""
import argparse
import sys
from pathlib import Path
from typing import Dict, Tuple

from . import board_render, segment_scores
from .board import METRICS, build_board, check_board_metrics, check_training_log, training_info
from .tuning import check_tuning, read_tuning
from .buckets import bucket_members, buckets_from_edges, parse_edges
from .cli import (
    Parser, add_failure_options, add_length_side_options, check_oracles, check_outputs, every_system_or_none,
    length_side, run_command,
)
from .evaluate import ScoringOptions
from .io import InputError, check_parallel, parse_named, parse_named_lists, read_lines, read_segments
from .lengths import whitespace_lengths
from .metrics import METRICS as ALL_METRICS
from .metrics import TOKENIZERS
from .textcheck import check_no_subword_markers, check_segmented, check_segmented_form

OUT_DIR_NAMES = {
    "markdown": "board.md", "json": "board.json", "csv": "board.csv", "latex": "board.tex",
    "bleu_plot": "bleu.png", "ratio_plot": "length_ratio.png", "failures_plot": "failures.png",
    "oracle_plot": "oracle.png",
}


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="relpos-leaderboard", description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", required=True, help="source sentences")
    parser.add_argument("--ref", required=True, help="reference translations")
    parser.add_argument("--length-file", metavar="F",
                        help="lengths from the whitespace tokens of F (default: the source's)")
    add_length_side_options(parser, per_seed=True)
    parser.add_argument("--system", action="append", default=[], metavar="NAME=HYP[,HYP...]",
                        help="a system's translations, one file per seed; repeat per system")
    parser.add_argument("--failed", action="append", default=[], metavar="NAME=WHY",
                        help="a system (or some of its seeds) that failed, and why: listed, not "
                        "dropped")
    parser.add_argument("--train-log", action="append", default=[], metavar="NAME=LOG[,LOG...]",
                        help="fairseq-train logs of a system, one per seed (learning rate, "
                        "updates, parameters, seconds per update)")
    parser.add_argument("--tuning", metavar="FILE",
                        help="the learning-rate selection the recipe wrote (JSON: per scheme, "
                        "the grid's dev losses and the chosen rate): shown as a table; every "
                        "system needs its entry, and its logs must be at the chosen rate")
    parser.add_argument("--learned-threshold", type=float, default=95.0, metavar="B",
                        help="a system whose mean BLEU within the training limit is below B did "
                        "not learn the task: listed apart, not ranked (default 95, for the "
                        "synthetic pair, where every scheme should come near 100 within the "
                        "limit; 0: no system is judged)")
    parser.add_argument("--segment-scores", action="append", default=[],
                        metavar="NAME:SYSTEM=FILE[,FILE...]",
                        help="a metric computed elsewhere (e.g. COMET): SYSTEM's score of each "
                        "sentence, one per line, a file per seed in --system's order; repeat "
                        "for every system")
    add_failure_options(parser, per_seed=True)
    parser.add_argument("--baseline", metavar="NAME",
                        help="the system the others are tested against (default: the first)")
    parser.add_argument("--train-limit", type=int, required=True, metavar="N",
                        help="the training length limit: the ranking is BLEU beyond it")
    parser.add_argument("--edges", default=None, metavar="E1,E2,...",
                        help="inclusive upper ends of the buckets (default: the limit, 1.5x, 2x)")
    parser.add_argument("--tokenize", choices=TOKENIZERS, metavar="TOK",
                        help="BLEU tokenizer (default 13a; none for tokenized text)")
    parser.add_argument("--metrics", default=",".join(METRICS), metavar="M1,M2,...",
                        help=f"the board's metrics, bleu among them: of {','.join(ALL_METRICS)} "
                        f"(default {','.join(METRICS)}; exact: exact match, SCAN's measure)")
    parser.add_argument("--rank-by", default="bleu", metavar="METRIC",
                        help="the metric of --metrics that ranks the systems beyond the training limit, "
                        "and that the free and oracle-length table compares (default bleu)")
    parser.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                        help="resamples of the pooled paired test (default 1000; 0: no test)")
    parser.add_argument("--seed", type=int, default=12345, help="seed of the resampling")
    parser.add_argument("--workers", type=int, default=2,
                        help="processes computing sentence statistics (default: 2)")
    parser.add_argument("--title", metavar="T", help="title of the table and plots")
    parser.add_argument("--out-dir", metavar="DIR", help="where the board's files go")
    return parser


def main(argv=None) -> int:
    return run_command(build_parser, run, argv)


def run(args: argparse.Namespace) -> Tuple[str, Dict[Path, bytes]]:
    targets = ({kind: Path(args.out_dir) / name for kind, name in OUT_DIR_NAMES.items()}
               if args.out_dir else {})
    metrics = [metric.strip() for metric in args.metrics.split(",")]
    try:
        check_board_metrics(metrics, args.rank_by)
    except InputError as err:
        raise InputError(f"--metrics {args.metrics} --rank-by {args.rank_by}: {err}") from None
    options = ScoringOptions(metrics=tuple(metrics), tokenize=args.tokenize, n_bootstrap=args.bootstrap, seed=args.seed,
                             short_ratio=args.short_ratio, workers=args.workers)
    options.check()
    if args.train_limit < 1:
        raise InputError(f"--train-limit must be positive, got {args.train_limit}")
    if not 0 <= args.learned_threshold <= 100:
        raise InputError(f"--learned-threshold is a BLEU score from 0 to 100, got {args.learned_threshold:g}")
    limit = args.train_limit
    edges = parse_edges(args.edges) if args.edges else sorted({limit, limit * 3 // 2, limit * 2})
    buckets = buckets_from_edges(edges)
    system_files = parse_named_lists(args.system, "--system", "NAME=HYP[,HYP...]")
    failures = dict(parse_named(args.failed, "--failed", "NAME=WHY"))
    logs = dict(parse_named_lists(args.train_log, "--train-log", "NAME=LOG[,LOG...]"))
    names = [name for name, _ in system_files]
    if not system_files and not failures:
        raise InputError("no --system to score and no --failed to list")
    unknown = sorted(set(logs) - set(names) - set(failures))
    if unknown:
        raise InputError(f"--train-log names {', '.join(unknown)}, which is no --system or --failed")
    if args.baseline is not None and args.baseline not in set(names) | set(failures):
        raise InputError(f"unknown baseline {args.baseline!r}: no --system or --failed names it")
    score_files = segment_scores.parse_specs(args.segment_scores, names, per_seed=True)
    for metric, by_system in score_files.items():
        for name, paths in system_files:
            if len(by_system[name]) != len(paths):
                raise InputError(f"{segment_scores.OPTION} {metric}:{name}: {len(by_system[name])} "
                                 f"files for the {len(paths)} seeds of --system {name}")
    seeds = {name: len(paths) for name, paths in system_files}
    log_prob_files = every_system_or_none(args.system_scores, "--system-scores", seeds, per_seed=True)
    system_length_files = every_system_or_none(args.system_lengths, "--system-lengths", seeds, per_seed=True)
    oracles = check_oracles(parse_named(args.oracle_decoding, "--oracle-decoding", "ORACLE=FREE"), seeds)
    if set(logs) & set(oracles):
        raise InputError(f"--train-log {sorted(set(logs) & set(oracles))[0]}: an oracle-length decoding's "
                         "training is its free system's; give the logs there")
    side = length_side(args, "given" if args.length_file else args.length_by or "source")
    inputs = [("--source", args.source), ("--ref", args.ref), ("--length-file", args.length_file),
              ("--reference-lengths", args.reference_lengths), ("--tuning", args.tuning)]
    inputs += [(f"--system {name}", path) for name, paths in system_files for path in paths]
    inputs += [(f"--train-log {name}", path) for name, paths in logs.items() for path in paths]
    inputs += [(f"{segment_scores.OPTION} {metric}:{name}", path)
               for metric, by_system in score_files.items()
               for name, paths in by_system.items() for path in paths]
    inputs += [(f"{option} {name}", path) for option, files in (("--system-scores", log_prob_files),
                                                                ("--system-lengths", system_length_files))
               for name, paths in files.items() for path in paths]
    check_outputs([(f"--out-dir ({path.name})", path) for path in targets.values()],
                  [(option, Path(path)) for option, path in inputs if path])

    source = read_segments(args.source, "source", "--source")
    references = read_segments(args.ref, "reference", "--ref")
    length_lines = read_lines(args.length_file, "--length-file") if args.length_file else source
    reference_length_lines = (read_lines(args.reference_lengths, "--reference-lengths")
                              if args.reference_lengths else references)
    systems = {name: [read_segments(path, "system", f"--system {name}") for path in paths]
               for name, paths in system_files}
    scores = {metric: {name: [segment_scores.read_scores(path, f"{segment_scores.OPTION} {metric}:{name}")
                              for path in paths]
                       for name, paths in by_system.items()}
              for metric, by_system in score_files.items()}
    log_probs = {name: [segment_scores.read_log_probs(path, f"--system-scores {name}") for path in paths]
                 for name, paths in log_prob_files.items()}
    segmented = {name: [read_lines(path, f"--system-lengths {name}") for path in paths]
                 for name, paths in system_length_files.items()}
    parallel = [(args.source, source), (args.ref, references),
                (args.length_file or args.source, length_lines),
                (args.reference_lengths or args.ref, reference_length_lines)]
    hypotheses = [(path, hyps) for name, paths in system_files
                  for path, hyps in zip(paths, systems[name])]
    parallel += hypotheses
    parallel += [(path, seed_scores) for metric, by_system in score_files.items()
                 for name, paths in by_system.items()
                 for path, seed_scores in zip(paths, scores[metric][name])]
    parallel += [(path, values) for files, read in ((log_prob_files, log_probs), (system_length_files, segmented))
                 for name, paths in files.items() for path, values in zip(paths, read[name])]
    check_parallel(parallel)
    for name, paths in system_length_files.items():
        for path, lines, hyp_path, hyps in zip(paths, segmented[name], dict(system_files)[name], systems[name]):
            check_segmented_form(path, lines, hyp_path, hyps, f"--system-lengths {name}")
    for path, segments in [parallel[1]] + hypotheses:
        check_no_subword_markers(path, segments)
    training = {}
    for name, paths in logs.items():
        option = f"--train-log {name}"
        log_lines = [read_lines(path, option) for path in paths]
        for path, lines in zip(paths, log_lines):
            check_training_log(lines, path, option)
        training[name] = training_info(log_lines, option)
    tuning = read_tuning(args.tuning) if args.tuning else None
    if tuning:
        # an oracle-length decoding is its free system's model: tuned with it
        check_tuning(tuning, [name for name in names if name not in oracles]
                     + [name for name in failures if name not in names],
                     {name: info.learning_rate for name, info in training.items()},
                     f"--tuning {args.tuning}")
    training.update({oracle: training[free] for oracle, free in oracles.items() if free in training})

    lengths = _lengths(args, side, length_lines, reference_length_lines, systems, segmented, system_files,
                       system_length_files)
    board = build_board(lengths, references, systems, buckets, limit, options, baseline=args.baseline,
                        failures=failures, training=training, segment_scores=scores,
                        log_probs=log_probs or None, oracles=oracles, learned_threshold=args.learned_threshold,
                        metrics=metrics, rank_metric=args.rank_by)
    markdown = board_render.markdown_table(board, args.title, tuning)
    first = lengths if side != "hypothesis" else next(iter(lengths.values()))[0]
    mean_lengths = [sum(first[i] for i in members) / len(members) if members else float("nan")
                    for members in bucket_members(first, buckets)]
    renderers = {
        "markdown": lambda: markdown.encode("utf-8"),
        "json": lambda: board_render.json_text(board, tuning).encode("utf-8"),
        "csv": lambda: board_render.csv_text(board).encode("utf-8"),
        "latex": lambda: board_render.latex_table(board, args.title, tuning).encode("utf-8"),
        "bleu_plot": lambda: board_render.bleu_plot(board, mean_lengths, args.title),
        "ratio_plot": lambda: board_render.length_ratio_plot(board, mean_lengths, args.title),
        "failures_plot": lambda: board_render.failures_plot(board, args.title),
        "oracle_plot": lambda: board_render.oracle_plot(board, mean_lengths, args.title),
    }
    return markdown, {path: renderers[kind]() for kind, path in targets.items()}


def _lengths(args, side, length_lines, reference_lines, systems, segmented, system_files, system_length_files):
    """Each sentence's length in whitespace tokens, or with --length-by hypothesis each
    system's, one list per seed."""
    def counted(path, lines):
        check_segmented(path, lines, "its whitespace tokens are no length: give the segmented text "
                        "(--length-file, --reference-lengths, --system-lengths)")
        return whitespace_lengths(lines)

    if side in ("given", "source"):
        return counted(args.length_file or args.source, length_lines)
    reference = counted(args.reference_lengths or args.ref, reference_lines)
    if side == "reference":
        return reference
    if side == "longer":
        return [max(pair) for pair in zip(counted(args.source, length_lines), reference)]
    files, texts = (system_length_files, segmented) if segmented else (dict(system_files), systems)
    return {name: [counted(path, lines) for path, lines in zip(files[name], texts[name])] for name in systems}


if __name__ == "__main__":
    sys.exit(main())
