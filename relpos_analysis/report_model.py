"""Scores, confidence intervals and paired tests of several systems per length bucket; the
failures of their translations per bucket (relpos_analysis.failures); the drop of each score
from within a training-length limit to each bucket beyond it; and what decoding with the
references' lengths changes (oracle-length decoding, relpos_analysis.docs: docs/analysis.md)."""
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import bootstrap, failures
from .buckets import Bucket, bucket_members
from .cache import StatisticsCache
from .io import InputError, check_parallel
from .metrics import (
    DEFAULT_METRICS, EXACT, LOWER_IS_BETTER, METRICS, SACREBLEU_METRICS, MetricConfig, SegmentMean, corpus_score,
    exact_description, exact_matches, length_ratio, scorer_signature, scores_from_sums, segment_statistics,
    sentence_statistics,
)

PAIRED_TESTS = ("bs", "ar")
TEST_NAMES = {"bs": "paired bootstrap resampling", "ar": "paired approximate randomization"}


@dataclass(frozen=True)
class ScoringOptions:
    """How sentences are scored and resampled, and where the work goes: one object for the
    report, the leaderboard and the library.

    ``metrics``: the metrics to compute, sacrebleu's and ``exact`` (exact match, see
    relpos_analysis.metrics.exact_matches); ``tokenize``, ``lowercase``, ``target_lang``:
    their options (``tokenize`` None: sacrebleu's tokenizer for ``target_lang``); resampling:
    ``n_bootstrap`` resamples for intervals and the paired bootstrap (0: none),
    ``paired_test`` "bs" or "ar" (``ar_trials`` trials), ``seed``; ``short_ratio``: a
    translation below this share of its reference's tokens is "short"
    (relpos_analysis.failures); ``train_limit``: the training-length limit, from which each
    bucket beyond it is compared with the sentences within it (None: no such comparison);
    ``workers`` processes compute sentence statistics, read from and added to ``cache``
    (relpos_analysis.cache); ``progress`` receives a line with the time of each stage."""
    metrics: Tuple[str, ...] = DEFAULT_METRICS
    tokenize: Optional[str] = None
    lowercase: bool = False
    target_lang: str = ""
    n_bootstrap: int = 1000
    seed: int = 12345
    paired_test: str = "bs"
    ar_trials: int = 10000
    short_ratio: float = failures.SHORT_RATIO
    train_limit: Optional[int] = None
    workers: int = 2
    cache: Optional[StatisticsCache] = None
    progress: Optional[Callable[[str], None]] = None

    def metric_configs(self) -> List[MetricConfig]:
        """sacrebleu's metrics among ``metrics``, with their options."""
        return [MetricConfig(name, self.tokenize, self.lowercase, self.target_lang)
                for name in self.metrics if name in SACREBLEU_METRICS]

    def check(self, n_sentences: int = 0) -> None:
        """Refuse options no report can run with (given ``n_sentences``, also resampling
        that would not fit in memory)."""
        if self.paired_test not in PAIRED_TESTS:
            raise InputError(f"unknown paired test {self.paired_test!r}; choose {' or '.join(PAIRED_TESTS)}")
        check_resampling(self.n_bootstrap, self.ar_trials, self.seed, n_sentences, self.paired_test)
        if not 0 < self.short_ratio <= 1:
            raise InputError(f"--short-ratio is a share of the reference's length, above 0 and at most 1, "
                             f"got {self.short_ratio:g}")
        if self.train_limit is not None and self.train_limit < 0:
            raise InputError(f"--train-limit must not be negative, got {self.train_limit}")
        if self.workers < 1:
            raise InputError(f"--workers must be at least 1, got {self.workers}")

    @property
    def resampling(self) -> dict:
        """The resampling as signatures show it."""
        shown = {"seed": self.seed, "bs": self.n_bootstrap or None}
        if self.paired_test == "ar":
            shown["ar"] = self.ar_trials
        return shown


@dataclass
class MetricResult:
    score: Optional[float]  # None for an empty bucket
    ci_lo: Optional[float] = None
    ci_hi: Optional[float] = None
    p_value: Optional[float] = None  # against the baseline; None for the baseline itself
    # 95% interval of (this system's score - the baseline's) over the same resamples: the
    # resampling is paired, so the interval is the difference's own, not two intervals'
    difference_ci_lo: Optional[float] = None
    difference_ci_hi: Optional[float] = None


@dataclass
class Cell:
    """One system on one bucket; ``bucket`` None stands for the whole test set.

    ``length_ratio``: hypothesis over reference length (BLEU's ratio; None without BLEU or
    sentences), which tells a system that stops early from one that runs on.
    ``identical_to_baseline``: every metric's sentence statistics of these sentences are
    the baseline's (the same translations, or ones that differ only in what the metrics
    ignore), so there is no difference to test."""
    system: str
    bucket: Optional[Bucket]
    n: int
    results: Dict[str, MetricResult]
    length_ratio: Optional[float] = None
    identical_to_baseline: bool = False


@dataclass(frozen=True)
class Change:
    """A difference of one metric's scores with its 95% bootstrap interval (None without
    resampling or sentences) and, where the two sides are the same sentences, the paired
    test's p-value."""
    value: Optional[float]
    ci_lo: Optional[float] = None
    ci_hi: Optional[float] = None
    p_value: Optional[float] = None


@dataclass
class LengthReport:
    """``lengths[system]``: each sentence's length as ``system``'s buckets count it, and
    ``sizes[system]`` its buckets' sizes; the same for every system unless
    ``buckets_per_system`` (bucketed by each system's own translation): then the systems'
    buckets hold different sentences, and only the whole set has paired tests.

    ``metrics`` are the scores (sacrebleu's, then those computed elsewhere), ``failure_metrics``
    the failure shares of relpos_analysis.failures (and the mean log-probability where
    given); ``cells`` hold both.  ``drops[(system, bucket)][metric]``: the bucket's score
    minus the score of every sentence within ``train_limit``.  ``oracles`` maps each
    oracle-length system to the system it is the free decoding of, and
    ``oracle_gains[(oracle, bucket)][metric]`` is its score minus the free system's on the
    free system's bucket (the whole set for ``None``).  ``failed`` lists the systems that
    could not be scored, and why."""
    systems: List[str]
    baseline: str
    buckets: List[Bucket]
    sizes: Dict[str, List[int]]
    lengths: Dict[str, List[int]]
    metrics: List[str]
    signatures: Dict[str, str]
    paired_test: str
    n_bootstrap: int
    ar_trials: int
    seed: int
    cells: List[Cell]
    failure_metrics: List[str] = field(default_factory=list)
    buckets_per_system: bool = False
    train_limit: Optional[int] = None
    drops: Dict[Tuple[str, Bucket], Dict[str, Change]] = field(default_factory=dict)
    oracles: Dict[str, str] = field(default_factory=dict)
    oracle_gains: Dict[Tuple[str, Optional[Bucket]], Dict[str, Change]] = field(default_factory=dict)
    failed: Dict[str, str] = field(default_factory=dict)
    # the system that is a human translation (a second reference scored against the others):
    # how its scores change with length is the metrics' own length bias (see length_bias)
    reference_row: Optional[str] = None

    def cell(self, system: str, bucket: Optional[Bucket]) -> Cell:
        return next(c for c in self.cells if c.system == system and c.bucket == bucket)

    @property
    def n_sentences(self) -> int:
        return len(next(iter(self.lengths.values())))

    @property
    def has_significance(self) -> bool:
        return self.paired_test == "ar" or self.n_bootstrap > 0

    @property
    def all_metrics(self) -> List[str]:
        return self.metrics + self.failure_metrics

    def beyond_buckets(self) -> List[Bucket]:
        """The buckets whose every length is beyond the training limit (none without one)."""
        if self.train_limit is None:
            return []
        return [bucket for bucket in self.buckets if bucket.lo > self.train_limit]

    def within_bucket(self) -> Optional[Bucket]:
        return None if self.train_limit is None else Bucket(0, self.train_limit)


Lengths = Union[Sequence[int], Mapping[str, Sequence[int]]]

# A metric whose score of a human translation worsens by more than this share of its value
# from the shortest bucket to the longest is flagged: part of every system's drop by length
# is then the metric's own (Zhang et al. 2025, "Penalizing length", docs/analysis.md).
LENGTH_BIAS_THRESHOLD = 0.05


@dataclass(frozen=True)
class LengthBias:
    """How one system's score of ``metric`` changes from its shortest bucket with sentences
    (``first``) to its longest (``last``): ``worsening`` is the change towards worse as a
    share of the first score (TER rising, the others falling; inf from a perfect TER of 0)."""
    metric: str
    first: Bucket
    first_score: float
    last: Bucket
    last_score: float
    worsening: float

    @property
    def flagged(self) -> bool:
        return self.worsening > LENGTH_BIAS_THRESHOLD


def length_bias(report: LengthReport, system: str, min_size: int = 1) -> List[LengthBias]:
    """``system``'s LengthBias for every score metric of the report (failure columns aside),
    from its shortest to its longest bucket of at least ``min_size`` sentences (a handful of
    sentences would judge the metric by their chance), where there are two such buckets."""
    scored = [bucket for bucket, size in zip(report.buckets, report.sizes[system]) if size >= max(min_size, 1)]
    if len(scored) < 2:
        return []
    first, last = scored[0], scored[-1]
    biases = []
    for metric in report.metrics:
        start = report.cell(system, first).results[metric].score
        end = report.cell(system, last).results[metric].score
        change = (end - start) if metric in LOWER_IS_BETTER else (start - end)
        worsening = change / abs(start) if start else (math.inf if change > 0 else 0.0)
        biases.append(LengthBias(metric, first, start, last, end, worsening))
    return biases


def evaluate_by_length(
    lengths: Lengths,
    references: Sequence[Sequence[str]],
    systems: Dict[str, Sequence[str]],
    buckets: Sequence[Bucket],
    options: ScoringOptions = ScoringOptions(),
    baseline: Optional[str] = None,
    segment_scores: Optional[Dict[str, Dict[str, Sequence[float]]]] = None,
    log_probs: Optional[Dict[str, Sequence[float]]] = None,
    oracles: Optional[Dict[str, str]] = None,
    statistics: Optional[Dict[str, Dict[str, np.ndarray]]] = None,
) -> LengthReport:
    """Every system's corpus scores and failure shares on every bucket and on the whole set.

    ``lengths`` is each sentence's length, or a mapping from every system to its own (e.g.
    its translations' lengths: each system then has its own buckets).  ``references`` holds
    one stream per reference translation; ``systems`` maps names to hypotheses, in the order
    they are to be reported.  The baseline (default: the first system) is what the paired
    test compares each other system with, bucket by bucket.  ``segment_scores`` maps a
    metric computed elsewhere (COMET, MetricX, ...) to every system's score of each
    sentence: such a metric follows ``options.metrics``, and its score on a set of sentences
    is their mean, with the same intervals and paired tests.  ``log_probs`` gives every
    system's mean log2-probability per token of each translation (the failure column
    ``logprob``).  ``oracles`` maps a system decoded with the references' lengths to the
    system it is the free decoding of (both in ``systems``).  Sentence statistics are
    computed (see ScoringOptions), or given as ``statistics`` (``[metric][system]``, as
    sentence_statistics returns them) where the caller has them already, e.g. for the same
    translations in other buckets.
    """
    names = list(systems)
    segment_scores = dict(segment_scores or {})
    oracles = dict(oracles or {})
    per_system = isinstance(lengths, Mapping)
    system_lengths = _checked_inputs(lengths, references, systems, options, segment_scores, log_probs, oracles)
    check_baseline(baseline, names)
    baseline = names[0] if baseline is None else baseline
    options.check(len(references[0]))

    failure_metrics = list(failures.FAILURES) + ([failures.LOG_PROB] if log_probs is not None else [])
    scorers = build_scorers(options, len(references), segment_scores, failure_metrics)
    stats = _statistics(scorers, options, references, systems, segment_scores, log_probs, statistics)

    start_time = time.perf_counter()
    scoring = _SubsetScoring(names, baseline, scorers, stats, options)
    members = {name: bucket_members(system_lengths[name], buckets) for name in names}
    cells = _cells(scoring, buckets, members, per_system)
    drops = _drops(scoring, names, system_lengths, buckets, options.train_limit, per_system)
    oracle_gains = _oracle_gains(scoring, oracles, buckets, members)
    if options.progress is not None:
        stages = ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in scoring.seconds.items())
        options.progress(f"scores of {len(buckets) + 1} sentence sets: {time.perf_counter() - start_time:.1f} s"
                         + (f" ({stages})" if stages else ""))

    return LengthReport(
        systems=names,
        baseline=baseline,
        buckets=list(buckets),
        sizes={name: [len(indices) for indices in members[name]] for name in names},
        lengths=system_lengths,
        metrics=list(options.metrics) + list(segment_scores),
        signatures={metric: scorer_signature(scorer, **options.resampling) for metric, scorer in scorers.items()},
        paired_test=options.paired_test,
        n_bootstrap=options.n_bootstrap,
        ar_trials=options.ar_trials,
        seed=options.seed,
        cells=cells,
        failure_metrics=failure_metrics,
        buckets_per_system=per_system,
        train_limit=options.train_limit,
        drops=drops,
        oracles=oracles,
        oracle_gains=oracle_gains,
    )


def _checked_inputs(lengths, references, systems, options, segment_scores, log_probs, oracles) -> Dict[str, List[int]]:
    """Each system's lengths (every system's the same unless ``lengths`` gives each its own),
    after refusing inputs that are not one set of sentences."""
    names = list(systems)
    per_system = isinstance(lengths, Mapping)
    system_lengths = ({name: list(lengths[name]) for name in names if name in lengths} if per_system
                      else {name: list(lengths) for name in names})
    parallel = [(f"reference {k + 1}", stream) for k, stream in enumerate(references)]
    parallel += [(f"system {name}", hyps) for name, hyps in systems.items()]
    absent = [name for name in names if name not in system_lengths]
    if absent:
        raise InputError(f"no lengths for {', '.join(absent)}: bucketed by system, every system needs its own")
    parallel += [(f"the lengths of {name}" if per_system else "the lengths", values)
                 for name, values in system_lengths.items()]
    for metric, by_system in segment_scores.items():
        if metric in METRICS or metric in options.metrics or metric in failures.DISPLAY_NAMES:
            raise InputError(f"segment scores named {metric!r}, like a computed metric")
        _check_every_system(by_system, names, f"{metric} segment scores")
        parallel += [(f"{metric} scores of {name}", by_system[name]) for name in names]
    if log_probs is not None:
        _check_every_system(log_probs, names, "log-probabilities")
        parallel += [(f"log-probabilities of {name}", log_probs[name]) for name in names]
    check_oracles(oracles, {name: 1 for name in names}, system="system of the report")
    check_parallel(parallel)
    return system_lengths


def build_scorers(options: ScoringOptions, n_references: int, segment_metrics: Sequence[str] = (),
                  failure_metrics: Sequence[str] = ()) -> Dict[str, object]:
    """Every metric's scorer, in the report's order: sacrebleu's (knowing ``n_references``,
    which their signatures show), exact match, the metrics computed elsewhere
    (``segment_metrics``) and the failure columns; each gives its signature as sacrebleu's
    metrics do (metrics.scorer_signature)."""
    scorers = {}
    for config in options.metric_configs():
        scorers[config.name] = config.build()
        # sacrebleu learns the number of references while caching them, which happens in the workers
        scorers[config.name].num_refs = n_references
    if EXACT in options.metrics:
        scorers[EXACT] = SegmentMean(EXACT, exact_description(options.lowercase))
    scorers.update({metric: SegmentMean(metric) for metric in segment_metrics})
    if failure_metrics:
        # the failure columns count the tokens of BLEU's tokenizer
        tokenizer = bleu_tokenizer(options).tokenizer_signature
        scorers.update({metric: SegmentMean(metric, failures.description(metric, tokenizer, options.short_ratio))
                        for metric in failure_metrics})
    return scorers


def bleu_tokenizer(options: ScoringOptions):
    """The BLEU metric whose tokenizer the failure columns count tokens with."""
    return MetricConfig("bleu", options.tokenize, options.lowercase, options.target_lang).build()


def _statistics(scorers, options, references, systems, segment_scores, log_probs, statistics):
    """``stats[metric][system]``: sentences x the metric's statistics, for every scorer.
    sacrebleu's are computed (see ScoringOptions) unless ``statistics`` gives them."""
    names = list(systems)
    n_sentences = len(references[0])
    configs = options.metric_configs()
    if statistics is None:
        stats = sentence_statistics(configs, references, systems, options.workers, options.cache,
                                    options.progress)
    else:
        stats = {config.name: {name: statistics[config.name][name] for name in names} for config in configs}
        for metric, by_system in stats.items():
            for name, rows in by_system.items():
                if len(rows) != n_sentences:
                    raise ValueError(f"statistics of {name} ({metric}): {len(rows)} sentences, "
                                     f"expected {n_sentences}")
    if EXACT in scorers:
        stats[EXACT] = {name: segment_statistics(exact_matches(hyps, references, options.lowercase))
                        for name, hyps in systems.items()}
    for metric, by_system in segment_scores.items():
        stats[metric] = {name: segment_statistics(by_system[name], f"{metric} scores of {name}")
                         for name in names}
    if failures.FAILURES[0] in scorers:
        tokenizer = bleu_tokenizer(options)
        reference_tokens = [tokenizer._preprocess_segment(line).split() for line in references[0]]
        flags = {name: failures.failure_flags([tokenizer._preprocess_segment(line).split() for line in hyps],
                                              reference_tokens, options.short_ratio)
                 for name, hyps in systems.items()}
        for metric in failures.FAILURES:
            stats[metric] = {name: segment_statistics(flags[name][metric], f"{metric} of {name}") for name in names}
    if failures.LOG_PROB in scorers:
        stats[failures.LOG_PROB] = {name: segment_statistics(log_probs[name], f"{failures.LOG_PROB} of {name}")
                                    for name in names}
    return stats


def _cells(scoring: "_SubsetScoring", buckets, members, per_system: bool) -> List[Cell]:
    """Every system's cell on every bucket, then on the whole set."""
    names = scoring.names
    cells: List[Cell] = []
    for k, bucket in enumerate(buckets):
        if per_system:
            cells += [cell for name in names
                      for cell in scoring.alone(name).cells(bucket, members[name][k])]
        else:
            cells += scoring.cells(bucket, members[names[0]][k])
    n_sentences = len(next(iter(scoring.stats.values()))[names[0]])
    return cells + scoring.cells(None, list(range(n_sentences)))


def _oracle_gains(scoring: "_SubsetScoring", oracles, buckets, members):
    """(oracle, bucket) -> metric -> the oracle-length decoding's score minus its free
    system's on the free system's buckets (None: the whole set), paired."""
    gains = {}
    n_sentences = len(next(iter(scoring.stats.values()))[scoring.names[0]])
    for oracle, free in oracles.items():
        pair = scoring.subset([free, oracle], free)
        for bucket, indices in list(zip(buckets, members[free])) + [(None, list(range(n_sentences)))]:
            free_cell, oracle_cell = pair.cells(bucket, indices)
            gains[oracle, bucket] = {
                metric: Change(_minus(result.score, free_cell.results[metric].score),
                               result.difference_ci_lo, result.difference_ci_hi, result.p_value)
                for metric, result in oracle_cell.results.items()}
    return gains


def check_oracles(oracles: Mapping[str, str], seeds: Mapping[str, int], option: str = "oracle-length decoding",
                  system: str = "system with translations") -> Dict[str, str]:
    """{oracle: free} pairs, refused unless both are systems with translations (``seeds``:
    name -> its number of seeds, or bands) with as many seeds, FREE no oracle-length decoding
    itself, and each free system has one oracle-length decoding.  ``option`` and ``system``
    name the pairs and the systems in the refusals (the command line's --oracle-decoding,
    --system)."""
    oracles = dict(oracles)
    for oracle, free in oracles.items():
        unknown = [name for name in (oracle, free) if name not in seeds]
        if unknown:
            raise InputError(f"{option} {oracle}={free}: {unknown[0]!r} is no {system}")
        if oracle == free or free in oracles:
            raise InputError(f"{option} {oracle}={free}: FREE must be a freely decoded system, "
                             "not itself or another oracle-length one")
        if seeds[oracle] != seeds[free]:
            raise InputError(f"{option} {oracle}={free}: {seeds[oracle]} files for {seeds[free]} seeds; "
                             f"seed k of {oracle} decodes seed k of {free}")
    frees = list(oracles.values())
    twice = sorted({free for free in frees if frees.count(free) > 1})
    if twice:
        raise InputError(f"{option} gives {', '.join(twice)} more than one oracle-length decoding")
    return oracles


def _check_every_system(by_system, names: Sequence[str], what: str) -> None:
    absent = [name for name in names if name not in by_system]
    if absent:
        raise InputError(f"no {what} for {', '.join(absent)}: every system needs them, to be tested "
                         "against the baseline")


def _minus(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return None if a is None or b is None else a - b


def _drops(scoring, names, system_lengths, buckets, train_limit, per_system):
    """(system, bucket beyond the limit) -> metric -> the bucket's score minus the score of
    every sentence within the limit, with the 95% interval of the difference of independent
    resamples of the two sets (they hold different sentences: nothing to pair)."""
    if train_limit is None:
        return {}
    beyond = [(k, bucket) for k, bucket in enumerate(buckets) if bucket.lo > train_limit]
    groups = [[name] for name in names] if per_system else [names]
    drops = {}
    for group in groups:
        part = scoring.alone(group[0]) if per_system else scoring
        lengths = system_lengths[group[0]]
        within = [i for i, length in enumerate(lengths) if length <= train_limit]
        # resample each set with its own stream: the bucket's number keys it, 0 the within set
        within_scores, within_resampled = part.scores(within), part.resampled(within, 0)
        for k, bucket in beyond:
            indices = [i for i, length in enumerate(lengths) if bucket.contains(length)]
            bucket_scores, bucket_resampled = part.scores(indices), part.resampled(indices, k + 1)
            for name in group:
                drops[name, bucket] = {
                    metric: _drop(bucket_scores[name][metric], within_scores[name][metric],
                                  bucket_resampled, within_resampled, metric, name)
                    for metric in scoring.scorers}
    return drops


def _drop(bucket_score, within_score, bucket_resampled, within_resampled, metric, name) -> Change:
    value = _minus(bucket_score, within_score)
    if value is None or bucket_resampled is None or within_resampled is None:
        return Change(value)
    return Change(value, *bootstrap.confidence_interval(
        np.subtract(bucket_resampled[metric][name], within_resampled[metric][name])))


def check_baseline(baseline: Optional[str], names: Sequence[str]) -> None:
    if baseline is not None and baseline not in names:
        raise InputError(f"unknown baseline {baseline!r}; systems are {', '.join(names)}")


def check_resampling(n_bootstrap: int, ar_trials: int, seed: int, n_sentences: int = 0,
                     paired_test: str = "bs") -> None:
    """The resampling options, and (given ``n_sentences``) that their draws fit in memory."""
    if n_bootstrap < 0 or ar_trials < 1:
        raise InputError("--bootstrap must be >= 0 and --ar-trials >= 1")
    if seed < 0:  # numpy's generators take no negative seed
        raise InputError(f"--seed must be a non-negative integer, got {seed}")
    bootstrap.check_draws("--bootstrap", n_bootstrap, n_sentences, bootstrap.INDEX_BYTES)
    if paired_test == "ar":
        bootstrap.check_draws("--ar-trials", ar_trials, n_sentences, bootstrap.SWAP_BYTES)


class _SubsetScoring:
    """Scores, intervals and p-values of the systems ``names`` on any subset of the
    sentences, from the sentence statistics computed once."""

    def __init__(self, names, baseline, scorers, stats, options: ScoringOptions, seconds=None):
        self.names, self.baseline, self.scorers, self.stats = names, baseline, scorers, stats
        self.options = options
        # seconds per stage, for the progress line (shared with the subsets' scorings)
        self.seconds: Dict[str, float] = {} if seconds is None else seconds

    def subset(self, names: Sequence[str], baseline: str) -> "_SubsetScoring":
        """The same scoring of fewer systems, tested against ``baseline``."""
        return _SubsetScoring(list(names), baseline, self.scorers, self.stats, self.options, self.seconds)

    def alone(self, name: str) -> "_SubsetScoring":
        """``name`` on its own: intervals, no test."""
        return self.subset([name], name)

    def _timed(self, stage: str, since: float) -> float:
        now = time.perf_counter()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + now - since
        return now

    def scores(self, indices: Sequence[int]) -> Dict[str, Dict[str, Optional[float]]]:
        """``scores[system][metric]`` on the sentences ``indices`` (None for none)."""
        return {name: {metric: corpus_score(scorer, self.stats[metric][name], indices).score if indices else None
                       for metric, scorer in self.scorers.items()}
                for name in self.names}

    def cells(self, bucket: Optional[Bucket], indices: List[int]) -> List[Cell]:
        """Every system's cell on the sentences ``indices``."""
        if not indices:
            return [Cell(name, bucket, 0, {metric: MetricResult(None) for metric in self.scorers})
                    for name in self.names]
        since = time.perf_counter()
        corpus = {
            name: {
                metric: corpus_score(scorer, self.stats[metric][name], indices)
                for metric, scorer in self.scorers.items()
            }
            for name in self.names
        }
        results = {
            name: {metric: MetricResult(score.score) for metric, score in corpus[name].items()}
            for name in self.names
        }
        since = self._timed("bucket scores", since)
        options = self.options
        if options.n_bootstrap > 0:
            resampled = self.resampled(indices)
            since = time.perf_counter()
            for name in self.names:
                for metric in self.scorers:
                    result = results[name][metric]
                    scores = resampled[metric][name]
                    result.ci_lo, result.ci_hi = bootstrap.confidence_interval(scores)
                    if name != self.baseline:
                        result.difference_ci_lo, result.difference_ci_hi = bootstrap.confidence_interval(
                            np.subtract(scores, resampled[metric][self.baseline]))
                    if options.paired_test == "bs" and name != self.baseline:
                        result.p_value = bootstrap.paired_bootstrap_p_value(
                            scores, resampled[metric][self.baseline],
                            abs(result.score - results[self.baseline][metric].score),
                        )
            since = self._timed("intervals and paired tests", since)
        if options.paired_test == "ar":
            for name in self.names:
                if name == self.baseline:
                    continue
                for metric, scorer in self.scorers.items():
                    result = results[name][metric]
                    result.p_value = bootstrap.approximate_randomization_p_value(
                        lambda sums: scores_from_sums(scorer, sums),
                        self.stats[metric][name][indices],
                        self.stats[metric][self.baseline][indices],
                        abs(result.score - results[self.baseline][metric].score),
                        options.ar_trials, options.seed,
                    )
            self._timed("approximate randomization", since)
        return [
            Cell(name, bucket, len(indices), results[name],
                 length_ratio(corpus[name]["bleu"]) if "bleu" in corpus[name] else None,
                 name != self.baseline and self._same_statistics_as_baseline(name, indices))
            for name in self.names
        ]

    def _same_statistics_as_baseline(self, name: str, indices: List[int]) -> bool:
        return all(np.array_equal(self.stats[metric][name][indices],
                                  self.stats[metric][self.baseline][indices])
                   for metric in self.scorers)

    def resampled(self, indices: Sequence[int],
                  stream: Optional[int] = None) -> Optional[Dict[str, Dict[str, List[float]]]]:
        """``scores[metric][system]`` of the bootstrap resamples of ``indices`` (None without
        resampling or sentences); all systems and metrics on the same resamples.  Drawn as
        sacrebleu draws them from the seed, or with ``stream``, from the seed and the stream's
        number: resamples of other sentence sets independent of these."""
        if not self.options.n_bootstrap or not len(indices):
            return None
        since = time.perf_counter()
        columns = [(metric, name) for metric in self.scorers for name in self.names]
        blocks = [self.stats[metric][name][indices] for metric, name in columns]
        seed = self.options.seed if stream is None else [self.options.seed, stream]
        resamples = bootstrap.resample_indices(len(indices), self.options.n_bootstrap, seed)
        since = self._timed("resample draws", since)
        sums = bootstrap.resampled_sums(np.hstack(blocks), resamples)
        since = self._timed("resample sums", since)
        scores: Dict[str, Dict[str, List[float]]] = {metric: {} for metric in self.scorers}
        start = 0
        for (metric, name), block in zip(columns, blocks):
            width = block.shape[1]
            block_sums = sums[:, start:start + width]
            scores[metric][name] = scores_from_sums(self.scorers[metric], block_sums)
            start += width
        self._timed("resample scores", since)
        return scores
