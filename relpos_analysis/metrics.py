"""Sentence statistics and corpus scores through sacrebleu's own metric classes.

Each sentence's sufficient statistics (n-gram counts, edit counts, ...) are computed once
per system and metric, and kept in the statistics cache (relpos_analysis.cache) between reports.
A bucket's score is sacrebleu's own formula over its sentences' summed statistics, hence
identical to running sacrebleu on that subset alone; bootstrap samples only re-sum them.
TER's edits come from relpos_analysis.ter (sacrebleu's search, compiled); all statistics are
computed in chunks on a process pool.  These are sacrebleu internals: setup.py bounds its
version to those checked.
"""
import math
import multiprocessing
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.metrics.base import Metric, Score
from sacrebleu.metrics.bleu import BLEUScore

from . import failures, ter
from .cache import StatisticsCache
from .io import InputError

SACREBLEU_METRICS = ("bleu", "ter", "chrf")
# exact match: the share of translations equal to a reference, the measure SCAN and other
# generated tasks are judged by (scored as a metric computed elsewhere is: SegmentMean)
EXACT = "exact"
METRICS = SACREBLEU_METRICS + (EXACT,)  # what --metrics can ask for
DEFAULT_METRICS = SACREBLEU_METRICS
DISPLAY_NAMES = {"bleu": "BLEU", "ter": "TER", "chrf": "chrF", EXACT: "exact %"}
LOWER_IS_BETTER = {"ter"}
TOKENIZERS = tuple(BLEU.TOKENIZERS)

# Chunks per worker: enough that the pool stays busy to the end despite the spread of
# sentence lengths (TER cost grows faster than linearly with length).
_CHUNKS_PER_WORKER = 32
_MIN_CHUNK = 50


@dataclass(frozen=True)
class MetricConfig:
    """``tokenize`` None: BLEU's tokenizer is sacrebleu's choice for ``target_lang`` (zh for
    Chinese, ja-mecab for Japanese, ko-mecab for Korean, else 13a)."""
    name: str
    tokenize: Optional[str] = None
    lowercase: bool = False
    target_lang: str = ""

    def build(self, references: Optional[Sequence[Sequence[str]]] = None) -> Metric:
        """The sacrebleu metric; with ``references`` it caches their n-grams / words."""
        if self.name == "bleu":
            # force: sacrebleu's "looks tokenized" warning would repeat for every chunk;
            # the CLI checks that once per system instead (see report.py).  trg_lang only
            # picks the tokenizer; beside an explicit one it would just warn, per chunk too.
            return BLEU(
                tokenize=self.tokenize, lowercase=self.lowercase, force=True, references=references,
                trg_lang=self.target_lang if self.tokenize is None else "",
            )
        if self.name == "ter":
            return TER(references=references)
        if self.name == "chrf":
            return CHRF(lowercase=self.lowercase, references=references)
        raise InputError(f"unknown metric {self.name!r}; choose from {', '.join(METRICS)}")


def display_name(metric: str) -> str:
    """sacrebleu's metrics by their usual spelling, the failure columns by theirs, a
    segment-score metric by its own name."""
    return DISPLAY_NAMES.get(metric) or failures.DISPLAY_NAMES.get(metric, metric)


def display_decimals(metric: str, scores: Sequence[Optional[float]]) -> int:
    """Decimals of ``metric``'s scores in the tables: one for sacrebleu's (0-100), three
    significant digits of the largest for a segment-score metric (COMET's 0.853, 85.3 for
    one given in percent), at most four; one for the failure shares (percent)."""
    largest = max((abs(score) for score in scores if score is not None and math.isfinite(score)),
                  default=0.0)
    if metric in METRICS or metric in failures.FAILURES or largest == 0:
        return 1
    return min(4, max(1, 2 - math.floor(math.log10(largest))))


def parse_metrics(text: str) -> List[str]:
    """The metrics a --metrics list names, in its order."""
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in METRICS]
    if unknown or not names:
        raise InputError(f"--metrics takes a list from {','.join(METRICS)}, got {text!r}")
    return list(dict.fromkeys(names))


def exact_matches(hypotheses: Sequence[str], references: Sequence[Sequence[str]],
                  lowercase: bool = False) -> List[float]:
    """Each translation's exact match: 100 if its whitespace tokens are those of one of the
    ``references`` (streams, as sacrebleu takes them), else 0; a set's mean is its share in
    percent.  Case counts unless ``lowercase``."""
    def normal(text: str) -> Tuple[str, ...]:
        return tuple((text.lower() if lowercase else text).split())

    return [100.0 if normal(hyp) in {normal(stream[i]) for stream in references} else 0.0
            for i, hyp in enumerate(hypotheses)]


def exact_description(lowercase: bool) -> Tuple[str, ...]:
    """What the exact-match column counts, as its signature shows it (SegmentMean)."""
    return ("share:translation equal to a reference, whitespace tokens", f"case:{'lc' if lowercase else 'mixed'}")


def signature(config: MetricConfig, n_references: int, **resampling) -> str:
    """sacrebleu's signature string, with ``resampling`` (e.g. bs=1000, seed=12345) added."""
    metric = config.build()
    # sacrebleu learns the number of references while caching them, which happens in the
    # workers; every sentence here has all of them.
    metric.num_refs = n_references
    return scorer_signature(metric, **resampling)


def scorer_signature(scorer, **resampling) -> str:
    """The signature of a sacrebleu metric (its num_refs set) or a SegmentMean, with
    ``resampling`` (e.g. bs=1000, seed=12345; None: not shown) added."""
    sig = scorer.get_signature()
    for key, value in resampling.items():
        sig.update(key, value)
    return sig.format()


def sentence_statistics(
    configs: Sequence[MetricConfig],
    references: Sequence[Sequence[str]],
    systems: Dict[str, Sequence[str]],
    workers: int = 2,
    cache: Optional[StatisticsCache] = None,
    progress: Optional[Callable[[str], None]] = None,
) -> Dict[str, Dict[str, np.ndarray]]:
    """``stats[metric][system]``: sacrebleu's statistics of each sentence, one row each.

    ``references`` is a list of reference streams (one per reference translation), as in
    sacrebleu's ``corpus_score``.  With a ``cache``, a system's statistics for a metric are
    computed once and then read back, so that adding a system to a report computes only
    that one.  ``progress`` receives one line per metric with its time.
    """
    stats: Dict[str, Dict[str, np.ndarray]] = {config.name: {} for config in configs}
    keys = {}
    widths = {config.name: statistics_width(config) for config in configs} if cache else {}
    for config in configs:
        for name, hyps in systems.items():
            if cache is not None:
                keys[config.name, name] = cache.key(
                    signature(config, len(references)), references, hyps)
                cached = cache.load(keys[config.name, name], len(hyps), widths[config.name])
                if cached is not None:
                    stats[config.name][name] = cached
    missing = {
        config: {name: hyps for name, hyps in systems.items() if name not in stats[config.name]}
        for config in configs
    }
    if any(systems_left and config.name == "ter" for config, systems_left in missing.items()):
        # compiled (or loaded from numba's cache) once here, before the workers fork
        ter.edit_counts([(["warm"], ["up"])])

    n_sentences = len(references[0])
    chunk = max(_MIN_CHUNK, math.ceil(n_sentences / (max(workers, 1) * _CHUNKS_PER_WORKER)))
    spans = [(start, min(start + chunk, n_sentences)) for start in range(0, n_sentences, chunk)]
    pool = multiprocessing.Pool(workers) if workers > 1 and any(missing.values()) else None
    try:
        for config, systems_left in missing.items():
            start_time = time.perf_counter()
            tasks = [
                (config, [stream[start:end] for stream in references],
                 {name: hyps[start:end] for name, hyps in systems_left.items()})
                for start, end in (spans if systems_left else [])
            ]
            results = (pool.map(_chunk_statistics, tasks, chunksize=1) if pool
                       else [_chunk_statistics(task) for task in tasks])
            for name in systems_left:
                rows = [row for chunk_stats in results for row in chunk_stats[name]]
                stats[config.name][name] = np.array(rows, dtype=float)
                if cache is not None:
                    cache.save(keys[config.name, name], stats[config.name][name])
            if progress is not None:
                progress(f"{config.name} statistics of {len(systems)} systems: "
                         f"{len(systems_left)} computed, {len(systems) - len(systems_left)} from "
                         f"the cache, {time.perf_counter() - start_time:.1f} s")
    finally:
        if pool is not None:
            pool.terminate()
    return {config.name: {name: stats[config.name][name] for name in systems}
            for config in configs}


def statistics_width(config: MetricConfig) -> int:
    """How many numbers a sentence's statistics are (what a cache entry must hold)."""
    if config.name == "ter":
        return 2  # [edits, reference length], as _ter_statistics computes them
    metric = config.build([["a"]])
    return len(metric._extract_corpus_statistics(["a"], None)[0])


def _chunk_statistics(task) -> Dict[str, List[list]]:
    config, references, systems = task
    # Systems often produce the same translation of a sentence (a quarter to almost half
    # of WMT21's, mostly short ones), so each distinct (sentence, hypothesis) pair is
    # scored once.
    distinct: Dict[Tuple[int, str], int] = {}
    for hyps in systems.values():
        for i, hyp in enumerate(hyps):
            distinct.setdefault((i, hyp), len(distinct))
    metric = config.build(references)
    per_sentence_references = [metric._ref_cache[i] for i, _ in distinct]
    hypotheses = [hyp for _, hyp in distinct]
    if config.name == "ter":
        stats = _ter_statistics(metric, hypotheses, per_sentence_references)
    else:
        metric._ref_cache = per_sentence_references
        stats = metric._extract_corpus_statistics(hypotheses, None)
    return {
        name: [stats[distinct[i, hyp]] for i, hyp in enumerate(hyps)]
        for name, hyps in systems.items()
    }


def _ter_statistics(metric: TER, hypotheses: Sequence[str], references: Sequence[dict]) -> List[list]:
    """sacrebleu's TER statistics ([fewest edits over the references, mean reference
    length], as its ``_compute_segment_statistics``), the edits counted by relpos_analysis.ter."""
    words = [metric._preprocess_segment(hyp).split() for hyp in hypotheses]
    pairs = [(hyp, ref) for hyp, refs in zip(words, references) for ref in refs["ref_words"]]
    edits = iter(ter.edit_counts(pairs))
    stats = []
    for refs in references:
        ref_words = refs["ref_words"]
        best = min(next(edits) for _ in ref_words)
        stats.append([best, sum(len(ref) for ref in ref_words) / len(ref_words)])
    return stats


class SegmentMean:
    """A metric computed elsewhere, one score per sentence (COMET, MetricX, ...), with the
    part of sacrebleu's metric interface that scoring sets of sentences uses: a sentence's
    statistics are [score, 1], so a set's summed statistics give its mean score.
    ``description`` is what its signature says it counts (exact match and the failure
    columns are such metrics too)."""

    def __init__(self, name: str, description: Sequence[str] = ("mean:segment scores",)) -> None:
        self.name = name
        self.description = tuple(description)

    def _compute_score_from_stats(self, stats: Sequence[float]) -> Score:
        total, count = stats
        return Score(self.name, total / count)

    def get_signature(self) -> "SegmentSignature":
        return SegmentSignature(self.description)


class SegmentSignature:
    """A SegmentMean's signature, with the part of sacrebleu's Signature interface that
    scorer_signature uses: what it counts, then the resampling as sacrebleu shows it."""
    RESAMPLING = ("bs", "ar", "seed")  # sacrebleu's order

    def __init__(self, description: Sequence[str]) -> None:
        self.description = tuple(description)
        self.resampling: Dict[str, object] = {}

    def update(self, key: str, value) -> None:
        self.resampling[key] = value

    def format(self) -> str:
        shown = [f"{key}:{self.resampling[key]}" for key in self.RESAMPLING if self.resampling.get(key) is not None]
        return "|".join(self.description + tuple(shown))


# A sentence's score computed elsewhere is at most this large in magnitude: a set's score
# is a sum over its sentences (and a resample's over as many), which must stay finite, and
# 1e100 times any number of sentences does.  No metric comes near it; 1e308 is a broken file.
SEGMENT_SCORE_BOUND = 1e100


def segment_statistics(scores: Sequence[float], what: str = "segment scores") -> np.ndarray:
    """sentences x [score, 1], SegmentMean's statistics; ``what`` names the scores in the
    refusal of one that is not finite or beyond SEGMENT_SCORE_BOUND."""
    values = np.asarray(scores, dtype=float)
    bad = np.flatnonzero(~(np.abs(values) <= SEGMENT_SCORE_BOUND))
    if bad.size:
        raise InputError(f"{what}: sentence {bad[0] + 1} has the score {float(values[bad[0]])!r}; expected a "
                         f"finite number of at most {SEGMENT_SCORE_BOUND:g} in magnitude")
    return np.column_stack([values, np.ones(len(values))])


def corpus_score(metric: Metric, stats: np.ndarray, indices: Sequence[int]) -> Score:
    """sacrebleu's corpus score of the sentences ``indices``: its formula applied to the
    statistics summed in sentence order, as its own aggregation sums them."""
    # cumsum adds strictly left to right (np.sum would add pairwise), so even the
    # fractional TER reference lengths of three or more references sum to the same float
    return metric._compute_score_from_stats(np.cumsum(stats[indices], axis=0)[-1].tolist())


def length_ratio(bleu: BLEUScore) -> float:
    """Hypothesis length over reference length, in BLEU's tokens (sacrebleu's BLEU ratio;
    with several references, the closest reference length of each sentence)."""
    return bleu.sys_len / bleu.ref_len if bleu.ref_len else math.nan


def scores_from_sums(metric: Metric, summed_stats) -> List[float]:
    """Scores of already summed statistics, one row per resample."""
    if isinstance(metric, SegmentMean):  # total / count, the same division as a row at a time
        return (summed_stats[:, 0] / summed_stats[:, 1]).tolist()
    return [metric._compute_score_from_stats(row).score for row in summed_stats.tolist()]
