"""The leaderboard: systems, each trained with several seeds, scored per length bucket and
ranked by BLEU beyond the training lengths, among the systems that learned the task within
them.

Every score is a corpus score of one seed's translations (sacrebleu, through
relpos_analysis.report_model); a cell holds the scores of all seeds, reported as their mean and
spread.  The paired test against the baseline pools the seeds: seed k of a system is paired
with seed k of the baseline on the same sentences, and that pooled set is resampled (paired
bootstrap resampling, as in the length report), so one test uses every seed's translations;
the difference to the baseline gets its 95% interval from the same resamples.

A system whose mean BLEU within the training limit is below the learned threshold did not
learn the task: its score beyond the limit would measure how far it got, not how it
extrapolates, so it is listed apart, unranked.
"""
import dataclasses
import statistics
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from .buckets import Bucket, bucket_members
from .report_model import (
    Change, LengthReport, MetricResult, ScoringOptions, build_scorers, check_baseline, check_oracles, check_resampling,
    evaluate_by_length,
)
from .failures import FAILURES, LOG_PROB
from .fairseq_log import FAIRSEQ_TRAIN_LINE, LEARNING_RATE, PARAMETERS, UPDATES, UPDATES_PER_SECOND
from .io import InputError
from .metrics import LOWER_IS_BETTER, scorer_signature, sentence_statistics
from .metrics import METRICS as ALL_METRICS

METRICS = ("bleu", "ter")


@dataclass(frozen=True)
class Spread:
    """One score over seeds."""
    values: Tuple[float, ...]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def sd(self) -> float:
        """Sample standard deviation (0 for a single seed)."""
        return statistics.stdev(self.values) if len(self.values) > 1 else 0.0

    @property
    def lo(self) -> float:
        return min(self.values)

    @property
    def hi(self) -> float:
        return max(self.values)


def spread(values: Sequence[Optional[float]]) -> Optional[Spread]:
    """The seeds' scores as a Spread; None when a seed has none (an empty bucket)."""
    if not values or any(value is None for value in values):
        return None
    return Spread(tuple(values))


@dataclass(frozen=True)
class TrainingInfo:
    """What a system's fairseq-train logs say about its training and its cost."""
    parameters: Optional[int] = None
    seconds_per_update: Optional[float] = None
    learning_rate: Optional[Tuple[float, ...]] = None  # fairseq's --lr: one rate per epoch
    updates: Optional[Spread] = None  # updates each seed's training took


def check_training_log(lines: Sequence[str], path, option: str) -> None:
    """Refuse a file with no line of fairseq-train's: its numbers would silently be none."""
    if not any(FAIRSEQ_TRAIN_LINE.search(line) for line in lines):
        raise InputError(f"{option}: {path} is not a fairseq-train log (no line has '| "
                         "fairseq_cli.train |', '| train_inner |', '| train |' or 'num. shared "
                         "model params'); expected the log fairseq-train wrote (train.log)")


def training_info(logs: Sequence[Sequence[str]], option: str = "") -> TrainingInfo:
    """What the logs of one system, one per seed, say: parameters (fairseq-train's "num.
    shared model params"), the median seconds per update over the progress and end-of-epoch
    lines, the learning rate of its configuration and each seed's updates (the last
    num_updates: a resumed training appends to its log).  ``option`` names the logs in errors."""
    named = f"{option}: " if option else ""
    parameters = {int(m.group(1).replace(",", "")) for log in logs for line in log
                  for m in [PARAMETERS.search(line)] if m}
    if len(parameters) > 1:
        raise InputError(f"{named}the training logs of one system disagree on its parameter count: "
                         f"{sorted(parameters)}")
    # the last configuration of a log is the one its final updates ran with
    learning_rates = {matches[-1] for log in logs
                      for matches in [[m.group(1) for line in log for m in LEARNING_RATE.finditer(line)]]
                      if matches}
    if len(learning_rates) > 1:
        raise InputError(f"{named}the training logs of one system disagree on its learning rate: "
                         f"{' and '.join(f'[{rate}]' for rate in sorted(learning_rates))}; a "
                         "system's seeds are trained at one rate")
    rates = [float(m.group(1)) for log in logs for line in log
             for m in [UPDATES_PER_SECOND.search(line)] if m and float(m.group(1)) > 0]
    updates = [[int(m.group(1)) for line in log for m in [UPDATES.search(line)] if m] for log in logs]
    return TrainingInfo(
        parameters=parameters.pop() if parameters else None,
        seconds_per_update=statistics.median(1 / rate for rate in rates) if rates else None,
        learning_rate=(tuple(float(rate) for rate in learning_rates.pop().split(","))
                       if learning_rates else None),
        updates=spread([seed[-1] if seed else None for seed in updates]),
    )


# A system's score minus the baseline's on their seeds pooled, with its 95% interval over the
# pooled test's resamples (None without resampling): a Change without its p-value, which the
# cell keeps beside it.
Difference = Change


@dataclass
class BoardCell:
    """One system on one sentence set: a bucket, or every pair within or beyond the
    training limit."""
    n: int  # sentences (of its first seed, where each seed has its own buckets)
    scores: Dict[str, Optional[Spread]]  # metric -> its seeds' scores (failure columns too)
    length_ratio: Optional[Spread]
    p_values: Dict[str, Optional[float]]  # metric -> pooled paired test; None for the baseline
    differences: Dict[str, Optional[Difference]]  # metric -> to the baseline; None for it
    seed_sizes: Tuple[int, ...] = ()  # each seed's sentences


@dataclass
class BoardRow:
    system: str
    seeds: int  # seeds with translations
    cells: List[BoardCell]  # one per bucket
    beyond: Optional[BoardCell]  # every pair longer than the training limit; None if failed
    training: TrainingInfo
    step_time_ratio: Optional[float]  # seconds per update over the baseline's
    failure: Optional[str] = None  # why seeds (or all of them) have no translations
    rank: Optional[int] = None  # None: not ranked (did not learn, oracle length, or nothing to rank)
    within: Optional[BoardCell] = None  # every pair within the training limit; None if failed
    retention: Optional[Spread] = None  # each seed's BLEU beyond the limit / within it
    # mean BLEU within the limit reached the learned threshold; None: not judged (no
    # threshold, no translations, no pair within the limit, or an oracle-length decoding)
    learned: Optional[bool] = None
    # each bucket beyond the limit -> metric -> its score minus the score within the limit,
    # on the seeds pooled, with the 95% interval of independent resamples of the two sets
    drops: Dict[Bucket, Dict[str, Change]] = field(default_factory=dict)
    oracle_of: Optional[str] = None  # the system this one decodes with oracle lengths
    # oracle-length rows: each bucket (None: every pair) -> metric -> its score minus the
    # free system's on the same sentences, seeds pooled and paired, with interval and p-value
    oracle_gains: Dict[Optional[Bucket], Dict[str, Change]] = field(default_factory=dict)


@dataclass
class Board:
    baseline: str
    train_limit: int
    buckets: List[Bucket]
    sizes: List[int]  # the buckets' sizes (of the first system's first seed where each has its own)
    within: Bucket  # every pair within the training limit
    within_size: int
    beyond: Bucket
    beyond_size: int
    rows: List[BoardRow]  # ranked, then those that did not learn, the oracle-length ones, the failed
    n_bootstrap: int
    seed: int
    signatures: Dict[str, str]
    metrics: List[str]  # the board's metrics (METRICS by default), then the segment-score metrics
    learned_threshold: float  # 0: no system is judged
    baseline_failure: Optional[str] = None  # why the baseline has no translations (no tests)
    failure_metrics: List[str] = field(default_factory=list)  # relpos_analysis.failures' columns
    buckets_per_system: bool = False  # bucketed by each system's (and seed's) own translation
    rank_metric: str = "bleu"  # the metric the systems are ranked by, beyond the limit

    def row(self, system: str) -> BoardRow:
        return next(row for row in self.rows if row.system == system)

    @property
    def has_tests(self) -> bool:
        return self.n_bootstrap > 0 and self.baseline_failure is None

    @property
    def oracles(self) -> Dict[str, str]:
        """Each oracle-length system -> the system it decodes with oracle lengths."""
        return {row.system: row.oracle_of for row in self.rows if row.oracle_of}

    def beyond_buckets(self) -> List[Bucket]:
        return [bucket for bucket in self.buckets if bucket.lo > self.train_limit]


# the key of the log-probabilities among the per-sentence inputs, and their name in refusals:
# no metric's name (those have no space)
LOG_PROBS = "log-probabilities (--system-scores)"
# each system's own lengths, one list per seed (a board bucketed by the translations' lengths)
SeedLengths = Mapping[str, Sequence[Sequence[int]]]


def build_board(
    lengths: Union[Sequence[int], SeedLengths],
    references: Sequence[str],
    systems: Dict[str, List[List[str]]],
    buckets: Sequence[Bucket],
    train_limit: int,
    options: ScoringOptions = ScoringOptions(metrics=METRICS, workers=1),
    baseline: Optional[str] = None,
    failures: Optional[Dict[str, str]] = None,
    training: Optional[Dict[str, TrainingInfo]] = None,
    segment_scores: Optional[Dict[str, Dict[str, List[Sequence[float]]]]] = None,
    log_probs: Optional[Dict[str, List[Sequence[float]]]] = None,
    oracles: Optional[Dict[str, str]] = None,
    learned_threshold: float = 0.0,
    metrics: Sequence[str] = METRICS,
    rank_metric: str = "bleu",
) -> Board:
    """The leaderboard of ``systems`` (name -> one list of translations per seed).

    ``lengths`` is each sentence's length, or each system's own per seed (bucketed by
    translation length: no paired tests then, the sets of two systems hold different
    sentences).  ``failures`` names systems whose seeds failed (training or translation) and
    why: a system with no translations at all is listed, unranked, with its failure; so is a
    baseline without translations, and the board then has no paired tests.  ``training``
    gives each system's parameter count, step time, learning rate and updates.  Systems are
    ranked by their mean BLEU over seeds on every pair longer than ``train_limit``, except
    those whose mean BLEU within it is below ``learned_threshold`` (0: none is judged), which
    are listed after the ranked ones, unranked, and the oracle-length decodings (``oracles``:
    oracle -> free system, seed k of one paired with seed k of the other), listed after them.
    ``metrics`` are the board's own (BLEU among them: the learned threshold and the retention
    are BLEU's), ``rank_metric`` one of them that ranks the systems (exact match on SCAN);
    ``options`` are the scoring's (its metrics are ``metrics``; its train_limit is
    ``train_limit``).  Each seed's sentence statistics are computed once (in
    ``options.workers`` processes) and serve every grouping and the pooled tests.
    ``segment_scores`` maps a metric computed elsewhere to each system's sentence scores,
    one list per seed (see evaluate_by_length); ``log_probs`` each system's mean
    log2-probability per token of each translation, one list per seed.
    """
    check_board_metrics(metrics, rank_metric)
    options = dataclasses.replace(options, metrics=tuple(metrics), train_limit=train_limit)
    inputs = _checked_inputs(lengths, references, systems, options, baseline, failures, segment_scores, log_probs,
                             oracles, learned_threshold)
    tested = options.n_bootstrap > 0 and inputs.baseline_failure is None
    within, beyond = halves = [Bucket(0, train_limit), Bucket(train_limit + 1, None)]
    scoring = _BoardScoring(references, buckets, halves, options, inputs.per_system)
    reports = _reports(scoring, inputs, tested)
    failure_metrics = list(FAILURES) + ([LOG_PROB] if log_probs is not None else [])
    metrics = list(metrics) + list(inputs.segment_scores)
    rows = _rows(inputs, reports, buckets, halves, metrics + failure_metrics, dict(training or {}),
                 learned_threshold)
    _rank(rows, rank_metric)
    resampling = {"bs": options.n_bootstrap, "seed": options.seed} if tested else {}
    signatures = {metric: scorer_signature(scorer, **resampling)
                  for metric, scorer in build_scorers(options, 1, inputs.segment_scores, failure_metrics).items()}
    # the sizes the tables show: the buckets' (the first system's first seed's, where each has its own)
    sizes_of = ((next(iter(inputs.seed_lengths.values()))[0] if inputs.seed_lengths else []) if inputs.per_system
                else list(lengths))
    return Board(
        baseline=inputs.baseline, train_limit=train_limit, buckets=list(buckets),
        sizes=[len(members) for members in bucket_members(sizes_of, buckets)],
        within=within, within_size=sum(length <= train_limit for length in sizes_of),
        beyond=beyond, beyond_size=sum(length > train_limit for length in sizes_of), rows=rows,
        n_bootstrap=options.n_bootstrap, seed=options.seed, signatures=signatures, metrics=metrics,
        learned_threshold=learned_threshold, baseline_failure=inputs.baseline_failure,
        failure_metrics=failure_metrics, buckets_per_system=inputs.per_system, rank_metric=rank_metric,
    )


@dataclass(frozen=True)
class _BoardInputs:
    """build_board's inputs, checked: ``names`` the board's systems (those with translations,
    then those only failed), ``seed_lengths`` each system's lengths per seed,
    ``per_seed_inputs`` the per-sentence inputs (metric or LOG_PROBS -> system -> values per
    seed)."""
    names: List[str]
    systems: Dict[str, List[List[str]]]
    baseline: str
    baseline_failure: Optional[str]  # why the baseline has no translations
    failures: Dict[str, str]
    seed_lengths: Dict[str, List[List[int]]]
    per_system: bool
    segment_scores: Dict[str, Dict[str, List[Sequence[float]]]]
    per_seed_inputs: Dict[str, Dict[str, List[Sequence[float]]]]
    oracles: Dict[str, str]


def _checked_inputs(lengths, references, systems, options, baseline, failures, segment_scores, log_probs, oracles,
                    learned_threshold) -> _BoardInputs:
    failures, segment_scores, oracles = dict(failures or {}), dict(segment_scores or {}), dict(oracles or {})
    names = list(systems) + [name for name in failures if name not in systems]
    if not names:
        raise InputError("no system to put on the board")
    if not 0 <= learned_threshold <= 100:
        raise InputError(f"the learned threshold is a BLEU score from 0 to 100, got {learned_threshold:g}")
    check_baseline(baseline, names)
    baseline = baseline or next(iter(systems), names[0])
    for name, seeds in systems.items():
        if not seeds:
            raise InputError(f"{name}: no translations (list it as a failure instead)")
    per_seed_inputs = dict(segment_scores, **({LOG_PROBS: log_probs} if log_probs is not None else {}))
    for metric, by_system in per_seed_inputs.items():
        for name, seeds in systems.items():
            if len(by_system.get(name, [])) != len(seeds):
                raise InputError(f"{metric}: {len(by_system.get(name, []))} files of segment "
                                 f"scores for {name}, which has {len(seeds)} seeds")
    per_system = isinstance(lengths, Mapping)
    seed_lengths = ({name: [list(values) for values in lengths[name]] for name in systems} if per_system
                    else {name: [list(lengths)] * len(seeds) for name, seeds in systems.items()})
    for name, seeds in systems.items():
        if len(seed_lengths[name]) != len(seeds):
            raise InputError(f"{len(seed_lengths[name])} files of lengths for {name}, which has {len(seeds)} seeds")
    check_oracles(oracles, {name: len(seeds) for name, seeds in systems.items()})
    if options.n_bootstrap > 0:
        pooled_sentences = len(references) * max((len(seeds) for seeds in systems.values()), default=0)
        check_resampling(options.n_bootstrap, 1, options.seed, pooled_sentences)
    return _BoardInputs(names=names, systems=systems, baseline=baseline,
                        baseline_failure=None if baseline in systems else failures[baseline], failures=failures,
                        seed_lengths=seed_lengths, per_system=per_system, segment_scores=segment_scores,
                        per_seed_inputs=per_seed_inputs, oracles=oracles)


@dataclass(frozen=True)
class _BoardReports:
    """The evaluations a board's cells are read from: ``per_seed[name]`` each seed's (on the
    buckets, on the halves), ``pooled[name]`` the pooled test's with the baseline (a list of
    none without tests), ``families[free]`` a free system's and its oracle-length
    decoding's seeds pooled (their drops and the oracle's gains)."""
    per_seed: Dict[str, list]
    pooled: Dict[str, list]
    families: Dict[str, LengthReport]


def _reports(scoring: "_BoardScoring", inputs: _BoardInputs, tested: bool) -> _BoardReports:
    """Each seed's sentence statistics computed once (in ``options.workers`` processes), and
    every evaluation of the board from them."""
    systems, seed_lengths, per_seed_inputs = inputs.systems, inputs.seed_lengths, inputs.per_seed_inputs
    options = scoring.options
    seeds = _seeds(systems, seed_lengths, per_seed_inputs)
    stats = [sentence_statistics(options.metric_configs(), [scoring.references], hyps, options.workers)
             for hyps, _, _ in seeds]  # [seed k][metric][system]: sentences x statistics
    return _BoardReports(
        per_seed=_per_seed_reports(scoring, seeds, stats),
        pooled=(_pooled_tests(scoring, systems, seed_lengths, per_seed_inputs, inputs.baseline, stats)
                if tested else {name: [] for name in systems}),
        families=_pooled_families(scoring, systems, seed_lengths, per_seed_inputs, inputs.oracles, stats))


def _rows(inputs: _BoardInputs, reports: _BoardReports, buckets, halves, metrics, training,
          learned_threshold) -> List[BoardRow]:
    """A row per system, unranked: its cells, training, retention, learned verdict, drops
    and oracle-length gains; a failed system's row has its failure only."""
    baseline, oracles = inputs.baseline, inputs.oracles
    base_time = training.get(baseline, TrainingInfo()).seconds_per_update
    rows = []
    for name in inputs.names:
        info = training.get(name, TrainingInfo())
        ratio = (info.seconds_per_update / base_time
                 if info.seconds_per_update and base_time else None)
        if name not in inputs.systems:
            rows.append(BoardRow(name, 0, [], None, info, ratio, inputs.failures[name]))
            continue
        per_seed, pooled = reports.per_seed[name], reports.pooled[name]
        within_cell, beyond_cell = (
            _cell([r[1] for r in per_seed], [p[1] for p in pooled], half, name, baseline, metrics)
            for half in halves)
        within_bleu = within_cell.scores["bleu"]
        family = reports.families[oracles.get(name, name)]
        rows.append(BoardRow(
            system=name,
            seeds=len(inputs.systems[name]),
            cells=[_cell([r[0] for r in per_seed], [p[0] for p in pooled], bucket, name, baseline, metrics)
                   for bucket in buckets],
            beyond=beyond_cell,
            training=info,
            step_time_ratio=ratio,
            failure=inputs.failures.get(name),
            within=within_cell,
            retention=_retention(within_bleu, beyond_cell.scores["bleu"]),
            learned=(within_bleu.mean >= learned_threshold
                     if learned_threshold > 0 and within_bleu is not None and name not in oracles else None),
            drops={bucket: family.drops[name, bucket] for bucket in buckets if (name, bucket) in family.drops},
            oracle_of=oracles.get(name),
            oracle_gains={bucket: gains for (system, bucket), gains in family.oracle_gains.items()
                          if system == name},
        ))
    return rows


def check_board_metrics(metrics: Sequence[str], rank_metric: str) -> None:
    """A board's metrics are the report's (relpos_analysis.metrics.METRICS), BLEU among them
    (the learned threshold and the retention are BLEU's); it ranks by one of them."""
    unknown = [metric for metric in metrics if metric not in ALL_METRICS]
    if unknown or "bleu" not in metrics or len(set(metrics)) != len(metrics):
        raise InputError(f"a board's metrics: some of {', '.join(ALL_METRICS)}, bleu among them, none twice; "
                         f"got {','.join(metrics)}")
    if rank_metric not in metrics:
        raise InputError(f"the board ranks by one of its metrics ({','.join(metrics)}), got {rank_metric}")


def _seeds(systems, seed_lengths, per_seed_inputs):
    """Seed k's translations of every system that has a seed k, their lengths and their
    per-sentence inputs (metric or LOG_PROBS -> system -> values), for k = 0, 1, ..."""
    most = max((len(seeds) for seeds in systems.values()), default=0)
    return [({name: seeds[k] for name, seeds in systems.items() if k < len(seeds)},
             {name: seed_lengths[name][k] for name, seeds in systems.items() if k < len(seeds)},
             {metric: {name: values[k] for name, values in by_system.items() if k < len(values)}
              for metric, by_system in per_seed_inputs.items()})
            for k in range(most)]


@dataclass(frozen=True)
class _BoardScoring:
    """evaluate_by_length of some of the board's systems (one seed, or seeds pooled) on its
    buckets and on the halves of the training limit, from statistics computed once."""
    references: Sequence[str]
    buckets: Sequence[Bucket]
    halves: Sequence[Bucket]
    options: ScoringOptions
    per_system: bool  # lengths per system (bucketed by translation length)

    def reports(self, lengths, hyps, inputs, stats, resampled=False, baseline=None, oracles=None,
                with_halves=True) -> Tuple[LengthReport, ...]:
        """(report on the buckets[, report on the halves]) of ``hyps`` (name -> translations,
        several seeds' one after another), their ``lengths`` (name -> one list), their
        per-sentence ``inputs`` (metric or LOG_PROBS -> name -> values) and ``stats``; with
        ``resampled``, intervals and tests against ``baseline``, and on the buckets the drops
        beyond the limit and the gains of ``oracles``."""
        n_sentences = len(next(iter(hyps.values())))
        references = [list(self.references) * (n_sentences // len(self.references))]
        segment = {metric: by_system for metric, by_system in inputs.items() if metric != LOG_PROBS}
        options = dataclasses.replace(self.options, n_bootstrap=self.options.n_bootstrap if resampled else 0)
        lengths = lengths if self.per_system else next(iter(lengths.values()))
        return tuple(
            evaluate_by_length(lengths, references, hyps, groups,
                               options if groups is self.buckets else dataclasses.replace(options, train_limit=None),
                               baseline=baseline, segment_scores=segment, log_probs=inputs.get(LOG_PROBS),
                               oracles=oracles if groups is self.buckets else None, statistics=stats)
            for groups in ([self.buckets, self.halves] if with_halves else [self.buckets]))


def _per_seed_reports(scoring: _BoardScoring, seeds, stats):
    """name -> [(report on the buckets, report on within/beyond the limit)] per seed, without
    resampling; all systems' seed k (``seeds[k]``) are scored together."""
    reports: Dict[str, list] = {}
    for (hyps, lengths, inputs), seed_stats in zip(seeds, stats):
        pair = scoring.reports(lengths, hyps, inputs, seed_stats)
        for name in hyps:
            reports.setdefault(name, []).append(pair)
    return reports


def _pool(names, count, systems, seed_lengths, per_seed_inputs, stats):
    """The first ``count`` seeds of ``names`` pooled: their translations, lengths,
    per-sentence inputs and statistics, seed after seed."""
    hyps = {name: [h for seed_hyps in systems[name][:count] for h in seed_hyps] for name in names}
    lengths = {name: [n for seed in seed_lengths[name][:count] for n in seed] for name in names}
    inputs = {metric: {name: [x for values in by_system[name][:count] for x in values] for name in names}
              for metric, by_system in per_seed_inputs.items()}
    pooled_stats = {metric: {name: np.concatenate([stats[k][metric][name] for k in range(count)])
                             for name in names}
                    for metric in stats[0]}
    return lengths, hyps, inputs, pooled_stats


def _pooled_tests(scoring: _BoardScoring, systems, seed_lengths, per_seed_inputs, baseline, stats):
    """name -> [(report on the buckets, report on the halves)] of the seeds pooled with the
    baseline's (a list of one).  Systems with the same number of seeds share one
    evaluation; a system with more seeds than the baseline pools only as many as the
    baseline has.  A pooled set's statistics are its seeds' rows, stacked."""
    pooled: Dict[str, list] = {name: [] for name in systems}
    by_count: Dict[int, List[str]] = {}
    for name, seeds in systems.items():
        by_count.setdefault(min(len(seeds), len(systems[baseline])), []).append(name)
    for count, names in sorted(by_count.items()):
        members = [baseline] + [n for n in names if n != baseline]
        reports = scoring.reports(*_pool(members, count, systems, seed_lengths, per_seed_inputs, stats),
                                  resampled=True, baseline=baseline)
        for name in names:
            pooled[name].append(reports)
    return pooled


def _pooled_families(scoring: _BoardScoring, systems, seed_lengths, per_seed_inputs, oracles, stats):
    """Each free system with its oracle-length decoding, if any, on all their seeds pooled:
    the report that has their drops beyond the limit and the oracle's gains; keyed by the
    free system."""
    families = {}
    for name, seeds in systems.items():
        if name in oracles:
            continue
        members = [name] + [oracle for oracle, free in oracles.items() if free == name]
        (families[name],) = scoring.reports(*_pool(members, len(seeds), systems, seed_lengths, per_seed_inputs,
                                                   stats),
                                            resampled=True, baseline=name,
                                            oracles={oracle: name for oracle in members[1:]}, with_halves=False)
    return families


def _cell(seed_reports: List[LengthReport], pooled: List[LengthReport], bucket: Bucket,
          name: str, baseline: str, metrics: Sequence[str]) -> BoardCell:
    cells = [report.cell(name, bucket) for report in seed_reports]
    tested = bool(pooled) and name != baseline
    pooled_results = pooled[0].cell(name, bucket).results if tested else {}
    baseline_results = pooled[0].cell(baseline, bucket).results if tested else {}
    return BoardCell(
        n=cells[0].n,
        scores={metric: spread([cell.results[metric].score for cell in cells])
                for metric in metrics},
        length_ratio=spread([cell.length_ratio for cell in cells]),
        p_values={metric: pooled_results[metric].p_value if tested else None
                  for metric in metrics},
        differences={metric: _difference(pooled_results[metric], baseline_results[metric])
                     if tested else None
                     for metric in metrics},
        seed_sizes=tuple(cell.n for cell in cells),
    )


def _difference(result: MetricResult, baseline: MetricResult) -> Optional[Difference]:
    if result.score is None or baseline.score is None:  # an empty set
        return None
    return Difference(result.score - baseline.score, result.difference_ci_lo, result.difference_ci_hi)


def _retention(within: Optional[Spread], beyond: Optional[Spread]) -> Optional[Spread]:
    """Each seed's BLEU beyond the limit over its BLEU within it; None where a seed has no
    BLEU within the limit to divide by."""
    if within is None or beyond is None or 0 in within.values:
        return None
    return Spread(tuple(b / w for b, w in zip(beyond.values, within.values)))


def _rank(rows: List[BoardRow], metric: str = "bleu") -> None:
    """Rank by the mean of ``metric`` beyond the limit, best first; equal means share a rank.  Systems
    that did not learn the task follow, unranked, best within the limit first; then the
    oracle-length decodings, unranked (the references' lengths are no system's), in the order
    of their free systems; rows with no score (every seed failed, or no sentence beyond the
    limit) go last, unranked."""
    def key(row):
        score = row.beyond.scores[metric] if row.beyond else None
        return None if not score else -score.mean if metric in LOWER_IS_BETTER else score.mean

    free = [row for row in rows if row.oracle_of is None]
    not_learned = sorted((row for row in free if row.learned is False),
                         key=lambda row: row.within.scores["bleu"].mean, reverse=True)
    scored = sorted((row for row in free if key(row) is not None and row.learned is not False),
                    key=key, reverse=True)
    for position, row in enumerate(scored):
        row.rank = scored[position - 1].rank if position and key(row) == key(scored[position - 1]) else position + 1
    order = [row.system for row in scored + not_learned]
    oracle_rows = sorted((row for row in rows if row.oracle_of is not None),
                         key=lambda row: order.index(row.oracle_of) if row.oracle_of in order else len(order))
    unranked = [row for row in free if key(row) is None and row.learned is not False]
    rows[:] = scored + not_learned + oracle_rows + unranked
