"""What schemes with a term per (query, key) pair share: the distances of a call, built once
per pass, and evaluation in chunks of queries for a term that cannot avoid an intermediate
wider than the logits (``huang3``'s gates, ``fire``'s MLP)."""
import math
from typing import Callable

import torch
from torch import Tensor
from torch.utils.checkpoint import checkpoint

from .base import AttentionSpan


def signed_distances(span: AttentionSpan) -> Tensor:
    """``p_j - p_i`` of every (query, key) of the call (``B|1 x Tq x Tk``, long, unclipped):
    the span's positions, drawn ones (``rand``) too; one for the batch in self-attention,
    one per row across sequences (``--cross-pos``)."""
    return span.relative_positions()


def absolute_distances(span: AttentionSpan) -> Tensor:
    """``|p_j - p_i|`` of every (query, key) of the call (``B|1 x Tq x Tk``, long)."""
    return span.once("absolute distances", lambda: signed_distances(span).abs())


def first_chunked_length(budget: int, per_query_and_key: int) -> int:
    """The length of the shortest sequence (its queries and keys alike) whose term
    :func:`in_query_chunks` computes in more than one chunk, at ``per_query_and_key``
    elements of intermediate per query and key."""
    length = max(1, math.isqrt(budget // per_query_and_key))
    while budget // (per_query_and_key * length) >= length:
        length += 1
    return length


def in_query_chunks(piece: Callable[[int, int], Tensor], q_len: int, per_query: int, budget: int,
                    dim: int) -> Tensor:
    """``piece(first, last)``, the term of queries ``first … last - 1``, over chunks of queries
    whose intermediates (``per_query`` elements a query) stay within ``budget`` elements,
    concatenated along ``dim``.  While gradients are recorded, each chunk is recomputed in
    the backward pass instead of kept, so memory stays within the budget in training too."""
    chunk = max(1, budget // max(1, per_query))
    pieces = []
    for first in range(0, q_len, chunk):
        last = min(q_len, first + chunk)
        if torch.is_grad_enabled():
            pieces.append(checkpoint(piece, first, last, use_reentrant=False))
        else:
            pieces.append(piece(first, last))
    return torch.cat(pieces, dim=dim)
