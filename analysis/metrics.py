"""Sentence statistics and corpus scores through sacrebleu's own metric classes.

Each sentence's sufficient statistics (n-gram counts, edit counts, ...) are computed once.
A bucket's score is sacrebleu's own aggregation of its sentences' statistics, hence
identical to running sacrebleu on that subset alone; bootstrap samples only re-sum them.
TER dominates the cost, so the statistics are computed in chunks on a process pool.
"""
import math
import multiprocessing
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.metrics.base import Metric, Score
from sacrebleu.metrics.bleu import BLEUScore

from .io import InputError

METRICS = ("bleu", "ter", "chrf")
DISPLAY_NAMES = {"bleu": "BLEU", "ter": "TER", "chrf": "chrF"}
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


def parse_metrics(text: str) -> List[str]:
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in METRICS]
    if unknown or not names:
        raise InputError(f"--metrics takes a list from {','.join(METRICS)}, got {text!r}")
    return list(dict.fromkeys(names))


def signature(config: MetricConfig, n_references: int, **resampling) -> str:
    """sacrebleu's signature string, with ``resampling`` (e.g. bs=1000, seed=12345) added."""
    metric = config.build()
    # sacrebleu learns the number of references while caching them, which happens in the
    # workers; every sentence here has all of them.
    metric.num_refs = n_references
    sig = metric.get_signature()
    for key, value in resampling.items():
        sig.update(key, value)
    return sig.format()


def sentence_statistics(
    configs: Sequence[MetricConfig],
    references: Sequence[Sequence[str]],
    systems: Dict[str, Sequence[str]],
    workers: int = 2,
) -> Dict[str, Dict[str, List[list]]]:
    """``stats[metric][system][i]``: sacrebleu's statistics of sentence i.

    ``references`` is a list of reference streams (one per reference translation), as in
    sacrebleu's ``corpus_score``.
    """
    n_sentences = len(references[0])
    chunk = max(_MIN_CHUNK, math.ceil(n_sentences / (max(workers, 1) * _CHUNKS_PER_WORKER)))
    spans = [(start, min(start + chunk, n_sentences)) for start in range(0, n_sentences, chunk)]
    # TER chunks first: they are the slow ones, the cheap BLEU/chrF chunks fill in at the end.
    ordered = sorted(configs, key=lambda config: config.name != "ter")
    tasks = [
        (
            config,
            [stream[start:end] for stream in references],
            {name: hyps[start:end] for name, hyps in systems.items()},
        )
        for config in ordered
        for start, end in spans
    ]
    if workers > 1:
        with multiprocessing.Pool(workers) as pool:
            results = pool.map(_chunk_statistics, tasks, chunksize=1)
    else:
        results = [_chunk_statistics(task) for task in tasks]

    stats: Dict[str, Dict[str, List[list]]] = {
        config.name: {name: [] for name in systems} for config in configs
    }
    for (config, _, _), chunk_stats in zip(tasks, results):
        for name, sentence_stats in chunk_stats.items():
            stats[config.name][name].extend(sentence_stats)
    return stats


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
    per_sentence_references = metric._ref_cache
    metric._ref_cache = [per_sentence_references[i] for i, _ in distinct]
    stats = metric._extract_corpus_statistics([hyp for _, hyp in distinct], None)
    return {
        name: [stats[distinct[i, hyp]] for i, hyp in enumerate(hyps)]
        for name, hyps in systems.items()
    }


def corpus_score(metric: Metric, stats: Sequence[list], indices: Sequence[int]) -> Score:
    """sacrebleu's corpus score of the sentences ``indices`` (its own sum and formula)."""
    return metric._aggregate_and_compute([stats[i] for i in indices])


def length_ratio(bleu: BLEUScore) -> float:
    """Hypothesis length over reference length, in BLEU's tokens (sacrebleu's BLEU ratio;
    with several references, the closest reference length of each sentence)."""
    return bleu.sys_len / bleu.ref_len if bleu.ref_len else math.nan


def scores_from_sums(metric: Metric, summed_stats) -> List[float]:
    """Scores of already summed statistics, one row per resample."""
    return [metric._compute_score_from_stats(row).score for row in summed_stats.tolist()]
