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

from .io import InputError

# Resamples (or randomization trials) turned into sums at a time; bounds the memory of
# the dense count/selection block to _BLOCK x sentences.
_BLOCK = 128
# Resampling's memory, bounded so that a large --bootstrap or --ar-trials is refused at
# once instead of failing to allocate after the statistics.  The draws are made at once,
# as sacrebleu makes them (that keeps every interval and p-value identical to its own):
# resamples x sentences indices of INDEX_BYTES each, or trials x sentences swap choices of
# SWAP_BYTES, at most MAX_DRAW_BYTES; and each resample's or trial's sums and scores are
# kept, at most MAX_DRAWS of them, which resolve p-values to 1e-5.
INDEX_BYTES, SWAP_BYTES = 8, 1
MAX_DRAW_BYTES = 2 * 2**30
MAX_DRAWS = 100_000


def check_draws(option: str, n_draws: int, n_sentences: int, item_bytes: int) -> None:
    """Refuse ``n_draws`` resamples or trials of ``n_sentences`` that would not fit."""
    if n_draws > MAX_DRAWS:
        raise InputError(f"{option} {n_draws}: at most {MAX_DRAWS}, which resolve p-values to "
                         f"{1 / MAX_DRAWS:g}; more only cost memory and time")
    if n_draws * n_sentences * item_bytes <= MAX_DRAW_BYTES:
        return
    raise InputError(
        f"{option} {n_draws} on {n_sentences} sentences would draw {n_draws} x {n_sentences} "
        f"at once ({n_draws * n_sentences * item_bytes / 2**30:.1f} GiB: they are drawn "
        f"together, as sacrebleu draws them, which keeps intervals and p-values equal to its "
        f"own); at most {MAX_DRAW_BYTES // (n_sentences * item_bytes)} fit in the "
        f"{MAX_DRAW_BYTES / 2**30:.0f} GiB allowed for them"
    )


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
    return _p_value(sample_differences - sample_differences.mean(), observed_difference)


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
    return _p_value(trial_differences, observed_difference)


def _p_value(differences: np.ndarray, observed_difference: float) -> float:
    """sacrebleu's p-value, (resampled differences above the observed one + 1) / (samples
    + 1), except that a zero difference is never significant: its p-value is 1.  Counting
    only the differences *above* the observed one, sacrebleu gives two systems with the same
    sentence statistics (texts that differ only in what the metrics ignore, such as trailing
    spaces), whose every resample differs by exactly zero, its smallest p-value."""
    if observed_difference == 0:
        return 1.0
    return _compute_p_value(differences, observed_difference)
