"""Scores, confidence intervals and paired tests of several systems per length bucket."""
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from . import bootstrap
from .buckets import Bucket, bucket_members
from .cache import StatisticsCache
from .io import InputError, check_parallel
from .metrics import (
    METRICS, MetricConfig, SegmentMean, corpus_score, length_ratio, scores_from_sums,
    segment_signature, segment_statistics, sentence_statistics, signature,
)

PAIRED_TESTS = ("bs", "ar")
TEST_NAMES = {"bs": "paired bootstrap resampling", "ar": "paired approximate randomization"}


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


@dataclass
class LengthReport:
    systems: List[str]
    baseline: str
    buckets: List[Bucket]
    sizes: List[int]
    lengths: List[int]
    metrics: List[str]
    signatures: Dict[str, str]
    paired_test: str
    n_bootstrap: int
    ar_trials: int
    seed: int
    cells: List[Cell]

    def cell(self, system: str, bucket: Optional[Bucket]) -> Cell:
        return next(c for c in self.cells if c.system == system and c.bucket == bucket)

    @property
    def has_significance(self) -> bool:
        return self.paired_test == "ar" or self.n_bootstrap > 0


def evaluate_by_length(
    lengths: Sequence[int],
    references: Sequence[Sequence[str]],
    systems: Dict[str, Sequence[str]],
    buckets: Sequence[Bucket],
    metrics: Sequence[str] = METRICS,
    baseline: Optional[str] = None,
    tokenize: Optional[str] = None,
    lowercase: bool = False,
    target_lang: str = "",
    n_bootstrap: int = 1000,
    seed: int = 12345,
    paired_test: str = "bs",
    ar_trials: int = 10000,
    workers: int = 2,
    cache: Optional[StatisticsCache] = None,
    progress: Optional[Callable[[str], None]] = None,
    statistics: Optional[Dict[str, Dict[str, np.ndarray]]] = None,
    segment_scores: Optional[Dict[str, Dict[str, Sequence[float]]]] = None,
) -> LengthReport:
    """Every system's corpus scores on every bucket and on the whole set.

    ``references`` holds one stream per reference translation; ``systems`` maps names to
    hypotheses, in the order they are to be reported.  The baseline (default: the first
    system) is what the paired test compares each other system with, bucket by bucket.
    Sentence statistics are read from and added to ``cache`` (see relpos_analysis.cache), or given
    as ``statistics`` (``[metric][system]``, as sentence_statistics returns them) where the
    caller has them already, e.g. for the same translations in other buckets;
    ``progress`` receives a line with the time of each stage.  ``segment_scores`` maps a
    metric computed elsewhere (COMET, MetricX, ...) to every system's score of each
    sentence: such a metric follows ``metrics``, and its score on a set of sentences is
    their mean, with the same intervals and paired tests.
    """
    names = list(systems)
    segment_scores = dict(segment_scores or {})
    parallel = [("the lengths", lengths)]
    parallel += [(f"reference {k + 1}", stream) for k, stream in enumerate(references)]
    parallel += [(f"system {name}", hyps) for name, hyps in systems.items()]
    for metric, by_system in segment_scores.items():
        if metric in METRICS or metric in metrics:
            raise InputError(f"segment scores named {metric!r}, like a computed metric")
        absent = [name for name in names if name not in by_system]
        if absent:
            raise InputError(f"no {metric} segment scores for {', '.join(absent)}: every system "
                             "needs them, to be tested against the baseline")
        parallel += [(f"{metric} scores of {name}", by_system[name]) for name in names]
    check_parallel(parallel)
    check_baseline(baseline, names)
    baseline = names[0] if baseline is None else baseline
    if paired_test not in PAIRED_TESTS:
        raise InputError(f"unknown paired test {paired_test!r}; choose {' or '.join(PAIRED_TESTS)}")
    check_resampling(n_bootstrap, ar_trials, seed, len(lengths), paired_test)

    configs = [MetricConfig(name, tokenize, lowercase, target_lang) for name in metrics]
    if statistics is None:
        stats = sentence_statistics(configs, references, systems, workers, cache, progress)
    else:
        stats = {metric: {name: statistics[metric][name] for name in names} for metric in metrics}
        for metric, by_system in stats.items():
            for name, rows in by_system.items():
                if len(rows) != len(lengths):
                    raise ValueError(f"statistics of {name} ({metric}): {len(rows)} sentences, "
                                     f"expected {len(lengths)}")
    scorers = {config.name: config.build() for config in configs}
    for metric, by_system in segment_scores.items():
        scorers[metric] = SegmentMean(metric)
        stats[metric] = {name: segment_statistics(by_system[name]) for name in names}
    start_time = time.perf_counter()
    scoring = _SubsetScoring(names, baseline, scorers, stats, n_bootstrap, seed, paired_test,
                             ar_trials)
    members = bucket_members(lengths, buckets)
    groups = list(zip(buckets, members)) + [(None, list(range(len(lengths))))]
    cells = [cell for bucket, indices in groups for cell in scoring.cells(bucket, indices)]
    if progress is not None:
        stages = ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in scoring.seconds.items())
        progress(f"scores of {len(groups)} sentence sets: {time.perf_counter() - start_time:.1f} s"
                 + (f" ({stages})" if stages else ""))

    resampling = {"seed": seed, "bs": n_bootstrap or None}
    if paired_test == "ar":
        resampling["ar"] = ar_trials
    signatures = {config.name: signature(config, len(references), **resampling)
                  for config in configs}
    signatures.update({metric: segment_signature(**resampling) for metric in segment_scores})
    return LengthReport(
        systems=names,
        baseline=baseline,
        buckets=list(buckets),
        sizes=[len(indices) for indices in members],
        lengths=list(lengths),
        metrics=list(metrics) + list(segment_scores),
        signatures=signatures,
        paired_test=paired_test,
        n_bootstrap=n_bootstrap,
        ar_trials=ar_trials,
        seed=seed,
        cells=cells,
    )


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
    """Scores, intervals and p-values of every system on any subset of the sentences,
    from the sentence statistics computed once."""

    def __init__(self, names, baseline, scorers, stats, n_bootstrap, seed, paired_test, ar_trials):
        self.names, self.baseline, self.scorers, self.stats = names, baseline, scorers, stats
        self.n_bootstrap, self.seed = n_bootstrap, seed
        self.paired_test, self.ar_trials = paired_test, ar_trials
        # seconds per stage, for the progress line
        self.seconds: Dict[str, float] = {}

    def _timed(self, stage: str, since: float) -> float:
        now = time.perf_counter()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + now - since
        return now

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
        if self.n_bootstrap > 0:
            resampled = self._bootstrap_scores(indices)
            since = time.perf_counter()
            for name in self.names:
                for metric in self.scorers:
                    result = results[name][metric]
                    scores = resampled[metric][name]
                    result.ci_lo, result.ci_hi = bootstrap.confidence_interval(scores)
                    if name != self.baseline:
                        result.difference_ci_lo, result.difference_ci_hi = bootstrap.confidence_interval(
                            np.subtract(scores, resampled[metric][self.baseline]))
                    if self.paired_test == "bs" and name != self.baseline:
                        result.p_value = bootstrap.paired_bootstrap_p_value(
                            scores, resampled[metric][self.baseline],
                            abs(result.score - results[self.baseline][metric].score),
                        )
            since = self._timed("intervals and paired tests", since)
        if self.paired_test == "ar":
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
                        self.ar_trials, self.seed,
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

    def _bootstrap_scores(self, indices: List[int]) -> Dict[str, Dict[str, List[float]]]:
        """``scores[metric][system]`` of the bootstrap resamples; all systems and metrics
        on the same resamples."""
        since = time.perf_counter()
        columns = [(metric, name) for metric in self.scorers for name in self.names]
        blocks = [self.stats[metric][name][indices] for metric, name in columns]
        resamples = bootstrap.resample_indices(len(indices), self.n_bootstrap, self.seed)
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
