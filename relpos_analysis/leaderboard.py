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
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from . import leaderboard_render, segment_scores
from .leaderboard_model import (METRICS, TrainingInfo, build_board, check_board_metrics, check_training_log,
                                training_info)
from .tuning import check_tuning, read_tuning
from .buckets import Bucket, bucket_members, buckets_from_edges, default_edges, parse_edges
from .cli import (
    Parser, add_failure_options, add_length_side_options, check_outputs, every_system_or_none,
    length_side, run_command,
)
from .report_model import ScoringOptions, check_oracles
from .inputs import InputFiles, LengthCounting, lengths_by_side, read_inputs
from .io import InputError, parse_named, parse_named_lists, read_lines
from .metrics import METRICS as ALL_METRICS
from .metrics import TOKENIZERS

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
                        help="inclusive upper ends of the buckets (default: the limit, 1.5x, 2x and 3x, as "
                        "relpos-report's)")
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
    return run_command(build_parser, BoardRequest.from_args, run, argv)


# what a file whose whitespace tokens are no length is told
_UNSEGMENTED = ("its whitespace tokens are no length: give the segmented text "
                "(--length-file, --reference-lengths, --system-lengths)")


@dataclass(frozen=True)
class BoardRequest:
    """A board as the command line asks for it, parsed and checked before any input is read."""
    files: InputFiles
    train_logs: Dict[str, List[str]]  # system -> a fairseq-train log per seed
    tuning: Optional[str]  # --tuning's file
    targets: Dict[str, Path]  # output kind -> its path
    options: ScoringOptions
    metrics: List[str]
    rank_metric: str
    train_limit: int
    buckets: List[Bucket]
    baseline: Optional[str]
    failures: Dict[str, str]
    oracles: Dict[str, str]
    learned_threshold: float
    side: str  # cli.LENGTH_SIDES, or "given" for --length-file
    title: Optional[str]

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "BoardRequest":
        targets = ({kind: Path(args.out_dir) / name for kind, name in OUT_DIR_NAMES.items()}
                   if args.out_dir else {})
        metrics = [metric.strip() for metric in args.metrics.split(",")]
        try:
            check_board_metrics(metrics, args.rank_by)
        except InputError as err:
            raise InputError(f"--metrics {args.metrics} --rank-by {args.rank_by}: {err}") from None
        options = ScoringOptions(metrics=tuple(metrics), tokenize=args.tokenize, n_bootstrap=args.bootstrap,
                                 seed=args.seed, short_ratio=args.short_ratio, workers=args.workers)
        options.check()
        if args.train_limit < 1:
            raise InputError(f"--train-limit must be positive, got {args.train_limit}")
        if not 0 <= args.learned_threshold <= 100:
            raise InputError(f"--learned-threshold is a BLEU score from 0 to 100, got {args.learned_threshold:g}")
        buckets = buckets_from_edges(parse_edges(args.edges) if args.edges else default_edges(args.train_limit))
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
        oracles = check_oracles(dict(parse_named(args.oracle_decoding, "--oracle-decoding", "ORACLE=FREE")), seeds,
                                "--oracle-decoding", "--system")
        if set(logs) & set(oracles):
            raise InputError(f"--train-log {sorted(set(logs) & set(oracles))[0]}: an oracle-length decoding's "
                             "training is its free system's; give the logs there")
        side = length_side(args, "given" if args.length_file else args.length_by or "source")
        files = InputFiles(
            source=args.source, references=(args.ref,), systems={name: tuple(paths) for name, paths in system_files},
            length_file=args.length_file, reference_lengths=args.reference_lengths,
            segment_scores={metric: {name: tuple(paths) for name, paths in by_system.items()}
                            for metric, by_system in score_files.items()},
            log_probs={name: tuple(paths) for name, paths in log_prob_files.items()},
            system_lengths={name: tuple(paths) for name, paths in system_length_files.items()},
        )
        inputs = files.named() + ([("--tuning", Path(args.tuning))] if args.tuning else [])
        inputs += [(f"--train-log {name}", Path(path)) for name, paths in logs.items() for path in paths]
        check_outputs([(f"--out-dir ({path.name})", path) for path in targets.values()], inputs)
        return cls(files=files, train_logs=logs, tuning=args.tuning, targets=targets, options=options,
                   metrics=metrics, rank_metric=args.rank_by, train_limit=args.train_limit, buckets=buckets,
                   baseline=args.baseline, failures=failures, oracles=oracles,
                   learned_threshold=args.learned_threshold, side=side, title=args.title)


def run(request: BoardRequest) -> Tuple[str, Dict[Path, bytes]]:
    """Everything but the printing and writing: the board's markdown and the output files."""
    texts = read_inputs(request.files)
    training, tuning = _training(request)
    lengths, _ = lengths_by_side(request.side, texts, LengthCounting(_UNSEGMENTED), _UNSEGMENTED)
    board = build_board(lengths, texts.references[0].lines,
                        {name: [text.lines for text in seeds] for name, seeds in texts.systems.items()},
                        request.buckets, request.train_limit, request.options, baseline=request.baseline,
                        failures=request.failures, training=training, segment_scores=texts.segment_scores,
                        log_probs=texts.log_probs or None, oracles=request.oracles,
                        learned_threshold=request.learned_threshold, metrics=request.metrics,
                        rank_metric=request.rank_metric)
    return _rendered(request, board, tuning, lengths)


def _training(request: BoardRequest) -> Tuple[Dict[str, TrainingInfo], Optional[dict]]:
    """What each system's training logs say (an oracle-length decoding's are its free
    system's), and the learning-rate selection of --tuning, checked against them."""
    training = {}
    for name, paths in request.train_logs.items():
        option = f"--train-log {name}"
        log_lines = [read_lines(path, option) for path in paths]
        for path, lines in zip(paths, log_lines):
            check_training_log(lines, path, option)
        training[name] = training_info(log_lines, option)
    tuning = read_tuning(request.tuning) if request.tuning else None
    if tuning:
        # an oracle-length decoding is its free system's model: tuned with it
        names = list(request.files.systems)
        check_tuning(tuning, [name for name in names if name not in request.oracles]
                     + [name for name in request.failures if name not in names],
                     {name: info.learning_rate for name, info in training.items()},
                     f"--tuning {request.tuning}")
    training.update({oracle: training[free] for oracle, free in request.oracles.items() if free in training})
    return training, tuning


def _rendered(request: BoardRequest, board, tuning, lengths) -> Tuple[str, Dict[Path, bytes]]:
    title = request.title
    markdown = leaderboard_render.markdown_table(board, title, tuning)
    first = lengths if request.side != "hypothesis" else next(iter(lengths.values()))[0]
    mean_lengths = [sum(first[i] for i in members) / len(members) if members else float("nan")
                    for members in bucket_members(first, request.buckets)]
    renderers = {
        "markdown": lambda: markdown.encode("utf-8"),
        "json": lambda: leaderboard_render.json_text(board, tuning).encode("utf-8"),
        "csv": lambda: leaderboard_render.csv_text(board).encode("utf-8"),
        "latex": lambda: leaderboard_render.latex_table(board, title, tuning).encode("utf-8"),
        "bleu_plot": lambda: leaderboard_render.bleu_plot(board, mean_lengths, title),
        "ratio_plot": lambda: leaderboard_render.length_ratio_plot(board, mean_lengths, title),
        "failures_plot": lambda: leaderboard_render.failures_plot(board, title),
        "oracle_plot": lambda: leaderboard_render.oracle_plot(board, mean_lengths, title),
    }
    return markdown, {path: renderers[kind]() for kind, path in request.targets.items()}


if __name__ == "__main__":
    sys.exit(main())
