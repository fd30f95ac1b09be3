"""Huang et al. 2020's relative position methods 1-4 (§3.5, eq. 11-17), a table per layer
and head indexed by distance; ``docs/positions.md`` has the equations.

1. ``e_ij = (q_i·k_j)·w_{|j-i|} / √d``           scalar, unsigned, multiplicative
2. ``e_ij = (q_i·k_j)·w_{j-i} / √d``             scalar, signed, multiplicative
3. ``e_ij = Σ_d q_id k_jd a_{j-i,d} / √d``       vector, a gate on every dimension
4. ``e_ij = (q_i·k_j + q_i·a_ij + k_j·a_ij) / √d``  vector, additive
"""
from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn

from . import register_scheme, sharing
from .base import DistanceTableScheme, check_clip, head_rows, xavier_per_head
from .pairwise import first_chunked_length, in_query_chunks


@dataclass(frozen=True)
class HuangSettings:
    clip: Optional[int] = None  # the paper clips nothing
    heads: str = sharing("separate", "a table per head (the paper), or one for all heads")
    layers: str = sharing("separate", "a table per layer (the paper), or one for the whole stack")

    def __post_init__(self):
        check_clip(self.clip)


class _HuangScalar(DistanceTableScheme):
    """Methods 1 and 2: the content logit times a trained scalar per head and distance."""

    Settings = HuangSettings
    family = "logit_transform"

    def __init__(self, settings, context):
        super().__init__(settings, context)
        # ones: training starts from plain content attention, and the sign of q·k is kept
        self.table = nn.Parameter(torch.ones(self.num_tables, self.num_distances))  # H|1 x R

    def transform_logits(self, logits, q, k, span):
        needed, index = self.window(span)
        return logits * self.table[:, needed][:, index].to(logits.dtype)  # B x H x Tq x Tk

    def flex_factor(self, span):
        needed, row = self.flex_window(span)
        table = head_rows(self.table[:, needed], self.context.num_heads)  # H x R
        return lambda b, h, q_idx, kv_idx: table[h, row(b, q_idx, kv_idx)]


@register_scheme("huang1")
class HuangMethod1(_HuangScalar):
    unsigned = True


@register_scheme("huang2")
class HuangMethod2(_HuangScalar):
    pass


@register_scheme("huang3")
class HuangMethod3(DistanceTableScheme):
    """The one method whose logits need every (query, key, dimension) product: it cannot
    avoid a ``B x H x n x n x d_h`` tensor, so it computes the logits in chunks of queries
    of at most ``pairwise_chunk_elements`` elements, recomputed in the backward pass rather
    than kept (Huang et al. report it fits 2 sequences per GPU where the others fit 20)."""

    Settings = HuangSettings
    family = "logit_transform"
    pairwise_chunk_elements = 2 ** 24  # 64 MiB of float32 per chunk

    def __init__(self, settings, context):
        super().__init__(settings, context)
        # ones: training starts from plain content attention, q·k = Σ_d q_d k_d
        self.table = nn.Parameter(torch.ones(self.num_tables, self.num_distances, context.head_dim))  # H|1 x R x dh

    def length_edges(self):
        per_query_and_key = self.context.num_heads * self.context.head_dim  # of one sentence
        return sorted([*super().length_edges(), first_chunked_length(self.pairwise_chunk_elements, per_query_and_key)])

    def transform_logits(self, logits, q, k, span):
        needed, index = self.window(span)  # Tq x Tk rows of the needed part of the table
        bsz, heads, q_len, head_dim = q.shape
        table = self.table[:, needed].to(q.dtype)  # H|1 x R x dh

        def gated_logits(first, last):  # B x H x c x Tk
            gates = table[:, index[first:last]]  # H|1 x c x Tk x dh
            return (q[:, :, first:last].unsqueeze(3) * gates * k.unsqueeze(2)).sum(-1)

        return in_query_chunks(gated_logits, q_len, bsz * heads * span.k_len * head_dim,
                               self.pairwise_chunk_elements, dim=2)  # B x H x Tq x Tk


@register_scheme("huang4")
class HuangMethod4(DistanceTableScheme):
    """``q_i·a_ij`` is Shaw's key term; ``k_j·a_ij`` the same with keys, both gathered from
    one product per distance, never per (query, key) pair."""

    Settings = HuangSettings

    def __init__(self, settings, context):
        super().__init__(settings, context)
        self.table = xavier_per_head(nn.Parameter(torch.empty(self.num_tables, self.num_distances,
                                                             context.head_dim)))  # H|1 x R x dh

    def logit_bias(self, q, k, span):
        needed, rows = self.window(span)  # Tq x Tk rows of the needed part of the table
        table = self.table[:, needed].to(q.dtype)  # H|1 x R x dh
        bsz, heads, q_len, head_dim = q.shape
        query_term = torch.matmul(q, table.transpose(-1, -2)).gather(-1, rows.expand(bsz, heads, -1, -1))
        keys = k * head_dim ** -0.5  # B x H x Tk x dh; q arrives scaled, k does not
        if q_len * head_dim < bsz * table.size(1):
            # few queries (a decoding step): each key meets only q_len distances
            key_term = torch.einsum("hqkd,bhkd->bhqk", table[:, rows], keys)  # B x H x Tq x Tk
        else:
            key_per_distance = torch.matmul(keys, table.transpose(-1, -2))  # B x H x Tk x R
            key_term = key_per_distance.gather(-1, rows.t().expand(bsz, heads, -1, -1)).transpose(-1, -2)
        return query_term + key_term  # B x H x Tq x Tk
