"""Bootstrap confidence intervals and paired significance tests on sentence statistics.

These follow ``sacrebleu.significance`` step by step: the same random draws for a seed,
the same 95% interval rule and the same p-value.  With the whole test set as one bucket
the results therefore agree with sacrebleu's paired tests.  What differs is the cost:
a resample's statistics are a count-weighted sum (``counts @ stats``), so no
samples x sentences x statistics array is ever built, and all systems of a bucket share
one set of resamples (which is what makes the bootstrap test paired).
"""
from typing import Sequence, Tuple

import numpy as np
from sacrebleu.significance import _compute_p_value

# Resamples (or randomization trials) turned into sums at a time; bounds the memory of
# the dense count/selection block to _BLOCK x sentences.
_BLOCK = 128


def resample_indices(n_sentences: int, n_samples: int, seed: int) -> np.ndarray:
    """``n_samples`` bootstrap resamples of sentence indices, drawn as sacrebleu draws them."""
    rng = np.random.default_rng(seed)
    return rng.choice(n_sentences, size=(n_samples, n_sentences), replace=True)


def resampled_sums(stats: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Summed statistics of each resample: ``stats[indices[s]].sum(0)`` for every s.

    ``stats`` is sentences x statistics; several metrics' and systems' statistics can be
    side by side in its columns, so one product serves them all.
    """
    n_sentences = stats.shape[0]
    sums = np.empty((len(indices), stats.shape[1]))
    for start in range(0, len(indices), _BLOCK):
        block = indices[start:start + _BLOCK]
        flat = (block + n_sentences * np.arange(len(block))[:, None]).ravel()
        counts = np.bincount(flat, minlength=block.size).reshape(block.shape)
        sums[start:start + len(block)] = counts @ stats
    return sums


def confidence_interval(scores: Sequence[float]) -> Tuple[float, float]:
    """95% percentile interval of bootstrap scores, by sacrebleu's rule (1/40 from each end)."""
    ordered = np.sort(np.asarray(scores, dtype=float))
    lower = len(ordered) // 40
    return float(ordered[lower]), float(ordered[len(ordered) - lower - 1])


def paired_bootstrap_p_value(
    system_scores: Sequence[float], baseline_scores: Sequence[float], observed_difference: float
) -> float:
    """Two-sided paired bootstrap p-value as in sacrebleu (Koehn 2004, Moses' script):
    how often the centred resampled |difference| exceeds the observed one."""
    sample_differences = np.abs(np.asarray(system_scores) - np.asarray(baseline_scores))
    return _compute_p_value(sample_differences - sample_differences.mean(), observed_difference)


def approximate_randomization_p_value(
    score_from_sums, system_stats: np.ndarray, baseline_stats: np.ndarray,
    observed_difference: float, n_trials: int, seed: int,
) -> float:
    """Two-sided paired approximate randomization p-value as in sacrebleu (Riezler and
    Maxwell 2005): each trial swaps a random half of the sentences between the systems.

    ``score_from_sums`` maps trials x statistics sums to a list of scores.
    """
    rng = np.random.default_rng(seed)
    # True: the sentence comes from the baseline in pseudo-system A (and from the system in B).
    take_baseline = rng.integers(2, size=(n_trials, len(system_stats)), dtype=bool)
    system_total, baseline_total = system_stats.sum(0), baseline_stats.sum(0)
    swap_gain = baseline_stats - system_stats
    trial_differences = np.empty(n_trials)
    for start in range(0, n_trials, _BLOCK):
        block = take_baseline[start:start + _BLOCK]
        sums_a = system_total + block @ swap_gain
        sums_b = system_total + baseline_total - sums_a
        trial_differences[start:start + len(block)] = np.abs(
            np.subtract(score_from_sums(sums_a), score_from_sums(sums_b))
        )
    return _compute_p_value(trial_differences, observed_difference)
