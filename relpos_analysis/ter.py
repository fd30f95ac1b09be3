"""sacrebleu's TER edit count, compiled.

sacrebleu's ``translation_edit_rate`` (``sacrebleu.metrics.lib_ter``) is a greedy shift
search around a beam-limited edit distance, written in pure Python: a few milliseconds per
sentence, which made it nine tenths of a length report's time.  This module follows it
step by step, with the same beam, the same limits, the same order of trying shifts and the
same tie-breaking, on integer word ids, compiled with numba.  Its edit counts are
sacrebleu's, sentence by sentence (tests/analysis/test_analysis.py checks every sentence of several
WMT21 systems and random edge cases against sacrebleu itself), at a fraction of the cost.

The one liberty taken is sacrebleu's row cache: a shifted hypothesis is scored from the
edit-distance row of the longest prefix it shares with the unshifted one, instead of from
a prefix tree of earlier candidates.  Rows depend only on the prefix, so this changes the
cost, never a number.
"""
import math
from typing import Dict, List, Sequence, Tuple

import numpy as np
from numba import njit

# sacrebleu.metrics.lib_ter's limits (Tercom's and its own).
_MAX_SHIFT_SIZE = 10
_MAX_SHIFT_DIST = 50
_BEAM_WIDTH = 25
_MAX_SHIFT_CANDIDATES = 1000
_INFINITY = 10 ** 16

# Edit operations of the rows ("undefined" outside the beam).
_NOP, _SUB, _INS, _DEL, _UNDEF = 0, 1, 2, 3, 4


@njit(cache=True)
def _beam(n_hyp, n_ref):
    """sacrebleu's length ratio and beam width for a hypothesis of ``n_hyp`` words."""
    ratio = n_ref / n_hyp if n_hyp > 0 else 1.0
    if _BEAM_WIDTH < ratio / 2:
        return ratio, math.ceil(ratio / 2 + _BEAM_WIDTH)
    return ratio, _BEAM_WIDTH


@njit(cache=True)
def _fill_row(hyp, ref, i, ratio, beam, previous, row, ops):
    """Row ``i`` of the beam-limited edit distance from row ``i - 1`` (``previous``);
    ``ops`` receives the chosen operations (sacrebleu's preference: match/substitution,
    then deletion, then insertion; a later one only if strictly cheaper), unless None
    (numba then compiles a version without them)."""
    n_hyp, n_ref = len(hyp), len(ref)
    row[:] = _INFINITY
    if ops is not None:
        ops[:] = _UNDEF
    diagonal = math.floor(i * ratio)
    lo = max(0, diagonal - beam)
    hi = min(n_ref + 1, diagonal + beam)
    if i == n_hyp:
        hi = n_ref + 1
    for j in range(lo, hi):
        if j == 0:
            row[0] = previous[0] + 1
            if ops is not None:
                ops[0] = _DEL
            continue
        op = _NOP if hyp[i - 1] == ref[j - 1] else _SUB
        best, best_op = previous[j - 1] + (op == _SUB), op
        if previous[j] + 1 < best:
            best, best_op = previous[j] + 1, _DEL
        if row[j - 1] + 1 < best:
            best, best_op = row[j - 1] + 1, _INS
        if best < row[j]:  # row[j] is infinite: cells the beam leaves unreached stay so
            row[j] = best
            if ops is not None:
                ops[j] = best_op


@njit(cache=True)
def _full_matrix(hyp, ref, costs, ops):
    """The whole edit-distance matrix of ``hyp`` (rows) against ``ref``, with operations."""
    n_hyp, n_ref = len(hyp), len(ref)
    ratio, beam = _beam(n_hyp, n_ref)
    for j in range(n_ref + 1):
        costs[0, j], ops[0, j] = j, _INS
    for i in range(1, n_hyp + 1):
        _fill_row(hyp, ref, i, ratio, beam, costs[i - 1], costs[i], ops[i])
    return costs[n_hyp, n_ref]


@njit(cache=True)
def _distance_from(hyp, ref, start, base_costs, row_a, row_b):
    """Edit distance of ``hyp``, whose first ``start`` words are those of the hypothesis
    that ``base_costs`` was computed for (its rows up to ``start`` are reused)."""
    n_hyp, n_ref = len(hyp), len(ref)
    ratio, beam = _beam(n_hyp, n_ref)
    row_a[:] = base_costs[start]
    previous, row = row_a, row_b
    for i in range(start + 1, n_hyp + 1):
        _fill_row(hyp, ref, i, ratio, beam, previous, row, None)
        previous, row = row, previous
    return previous[n_ref]


@njit(cache=True)
def _alignment(ops, n_hyp, n_ref, align, hyp_err, ref_err):
    """sacrebleu's trace_to_alignment of the flipped trace, read back from the matrix end."""
    i, j = n_hyp, n_ref
    while i > 0 or j > 0:
        op = ops[i, j]
        if op == _NOP or op == _SUB:
            i -= 1
            j -= 1
            align[j] = i
            hyp_err[i] = op == _SUB
            ref_err[j] = op == _SUB
        elif op == _DEL:  # a hypothesis word with no reference word
            i -= 1
            hyp_err[i] = 1
        elif op == _INS:  # a reference word with no hypothesis word
            j -= 1
            align[j] = i - 1
            ref_err[j] = 1
        else:
            raise ValueError("TER: the edit-distance trace left the beam")


@njit(cache=True)
def _shifted(words, start, length, target, out):
    """sacrebleu's _perform_shift (with Python's slice clamping) into ``out``."""
    n = len(words)
    k = 0
    if target < start:
        pieces = ((0, target), (start, start + length), (target, start), (start + length, n))
    elif target > start + length:
        pieces = ((0, start), (start + length, target), (start, start + length), (target, n))
    else:
        pieces = ((0, start), (start + length, length + target), (start, start + length),
                  (length + target, n))
    for a, b in pieces:
        b = min(b, n)
        for p in range(a, b):
            out[k] = words[p]
            k += 1


@njit(cache=True)
def _common_prefix(a, b):
    n = 0
    while n < len(a) and a[n] == b[n]:
        n += 1
    return n


@njit(cache=True)
def edit_count(hyp, ref):
    """sacrebleu's translation_edit_rate(hyp, ref)[0] on word ids."""
    n_hyp, n_ref = len(hyp), len(ref)
    if n_ref == 0:
        return n_hyp
    costs = np.empty((n_hyp + 1, n_ref + 1), dtype=np.int64)
    ops = np.empty((n_hyp + 1, n_ref + 1), dtype=np.int8)
    row_a = np.empty(n_ref + 1, dtype=np.int64)
    row_b = np.empty(n_ref + 1, dtype=np.int64)
    align = np.empty(n_ref, dtype=np.int64)
    hyp_err = np.zeros(n_hyp, dtype=np.int64)
    ref_err = np.zeros(n_ref, dtype=np.int64)
    words = hyp.copy()
    candidate = np.empty_like(hyp)
    best_words = np.empty_like(hyp)
    shifts = 0
    checked = 0
    while True:
        # one round of sacrebleu's _shift: the best single shift of the current words
        pre_score = _full_matrix(words, ref, costs, ops)
        hyp_err[:] = 0
        ref_err[:] = 0
        _alignment(ops, n_hyp, n_ref, align, hyp_err, ref_err)
        found = False
        best_score, best_length, best_start, best_target = 0, 0, 0, 0
        stop = False
        for start_h in range(n_hyp):
            if stop:
                break
            for start_r in range(n_ref):
                if stop:
                    break
                if abs(start_r - start_h) > _MAX_SHIFT_DIST:
                    continue
                length = 0
                while length < _MAX_SHIFT_SIZE and words[start_h + length] == ref[start_r + length]:
                    length += 1
                    # sacrebleu's _find_shifted_pairs yields (start_h, start_r, length) here
                    if (hyp_err[start_h:start_h + length].sum() != 0
                            and ref_err[start_r:start_r + length].sum() != 0
                            and not start_h <= align[start_r] < start_h + length):
                        previous_target = -1
                        for offset in range(-1, length):
                            if start_r + offset == -1:
                                target = 0
                            elif start_r + offset < n_ref:
                                target = align[start_r + offset] + 1
                            else:
                                break
                            if target == previous_target:
                                continue
                            previous_target = target
                            _shifted(words, start_h, length, target, candidate)
                            prefix = _common_prefix(words, candidate)
                            score = pre_score - _distance_from(
                                candidate, ref, prefix, costs, row_a, row_b)
                            checked += 1
                            # sacrebleu ranks (score, length, -start_h, -target), highest first
                            if (not found or score > best_score or (score == best_score and (
                                    length > best_length or (length == best_length and (
                                        -start_h > -best_start or (start_h == best_start
                                                                   and -target > -best_target)))))):
                                found = True
                                best_score, best_length = score, length
                                best_start, best_target = start_h, target
                                best_words[:] = candidate
                        if checked >= _MAX_SHIFT_CANDIDATES:
                            stop = True
                            break
                    if n_hyp == start_h + length or n_ref == start_r + length:
                        break
        if checked >= _MAX_SHIFT_CANDIDATES or not found or best_score <= 0:
            break
        shifts += 1
        words[:] = best_words
    return shifts + _full_matrix(words, ref, costs, ops)


@njit(cache=True)
def _edit_counts(hyp_ids, hyp_bounds, ref_ids, ref_bounds):
    counts = np.empty(len(hyp_bounds) - 1, dtype=np.int64)
    for k in range(len(counts)):
        counts[k] = edit_count(hyp_ids[hyp_bounds[k]:hyp_bounds[k + 1]],
                               ref_ids[ref_bounds[k]:ref_bounds[k + 1]])
    return counts


def edit_counts(pairs: Sequence[Tuple[List[str], List[str]]]) -> List[int]:
    """sacrebleu's translation_edit_rate edit count of each (hypothesis words, reference
    words) pair, the words already tokenized by sacrebleu's TER tokenizer."""
    hyp_ids: List[int] = []
    ref_ids: List[int] = []
    hyp_bounds, ref_bounds = [0], [0]
    for hyp, ref in pairs:
        # ids only need to tell words of this pair apart
        vocabulary: Dict[str, int] = {}
        hyp_ids.extend(vocabulary.setdefault(word, len(vocabulary)) for word in hyp)
        ref_ids.extend(vocabulary.setdefault(word, len(vocabulary)) for word in ref)
        hyp_bounds.append(len(hyp_ids))
        ref_bounds.append(len(ref_ids))
    counts = _edit_counts(
        np.array(hyp_ids, dtype=np.int64), np.array(hyp_bounds, dtype=np.int64),
        np.array(ref_ids, dtype=np.int64), np.array(ref_bounds, dtype=np.int64),
    )
    return counts.tolist()
