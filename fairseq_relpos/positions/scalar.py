"""Chen et al. 2021's per-head scalar position terms: REL-SCALAR (eq. 11 without segments,
``R_h[j - i]``) and ABS-SCALAR (eq. 7, ``(P_h P_hᵀ)_ij``); ``docs/positions.md``."""
from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn

from . import register_scheme, sharing
from .base import AttentionScheme, DistanceTableScheme, check_clip, check_table, head_rows


@register_scheme("rel_scalar")
class RelativeScalar(DistanceTableScheme):
    """A trained scalar per head, layer and distance ``j - i``, added to the logits; no
    bucketing.  Stored ``distances x heads`` like T5's table."""

    @dataclass(frozen=True)
    class Settings:
        clip: Optional[int] = None
        heads: str = sharing("separate", "a scalar per head, or one for all heads")
        layers: str = sharing("separate", "a table per layer, or one for the whole stack")

        def __post_init__(self):
            check_clip(self.clip)

    def __init__(self, settings, context):
        super().__init__(settings, context)
        self.table = nn.Parameter(torch.empty(self.num_distances, self.num_tables))  # R x H|1
        nn.init.normal_(self.table, std=context.embed_dim ** -0.5)


    def logit_bias(self, q, k, span):
        def build():
            needed, index = self.window(span)
            # indexed along the last dimension: the bias is contiguous in the keys, as fused kernels need
            return self.table[needed].t()[:, index].unsqueeze(0)  # 1 x H|1 x Tq x Tk

        return span.once(self, build).to(q.dtype)

    def flex_bias(self, q, k, span):
        needed, row = self.flex_window(span)
        table = head_rows(self.table[needed].t(), self.context.num_heads)  # H x R
        return lambda b, h, q_idx, kv_idx: table[h, row(b, q_idx, kv_idx)]


@register_scheme("abs_scalar")
class AbsoluteScalar(AttentionScheme):
    """``P_h ∈ R^{n x d_h}`` per head (and layer): the logit of tokens at positions ``p`` and
    ``p'`` gains ``P_h[p]·P_h[p']``.  Positions count the real tokens of a row, so left
    padding changes nothing; positions beyond the table are refused."""

    @dataclass(frozen=True)
    class Settings:
        heads: str = sharing("separate", "a table per head, or one for all heads")
        layers: str = sharing("separate", "a table per layer, or one for the whole stack")

    def __init__(self, settings, context):
        super().__init__(settings, context)
        tables = context.num_heads if settings.heads == "separate" else 1
        self.table = nn.Parameter(torch.empty(tables, context.max_positions, context.head_dim))  # H|1 x n x dh
        nn.init.normal_(self.table, std=context.head_dim ** -0.5)

    def max_positions(self) -> Optional[int]:
        return self.context.max_positions

    def logit_bias(self, q, k, span):
        key_positions = span.key_token_positions()  # B|1 x Tk
        counted = span.keys.start == 0 and span.keys.row_shift is None  # 0 … k_len-1
        needed = span.k_len if counted else span.once("positions_needed", lambda: int(key_positions.max()) + 1)
        check_table(self, needed, self.context.max_positions, f"position {needed - 1}", "positions",
                    "absolute positions cannot extrapolate to longer inputs")
        query_positions = key_positions[:, span.q_start:]  # B|1 x Tq
        key_rows = self.table[:, key_positions].transpose(0, 1)  # B|1 x H|1 x Tk x dh
        query_rows = self.table[:, query_positions].transpose(0, 1)  # B|1 x H|1 x Tq x dh
        return torch.matmul(query_rows, key_rows.transpose(-1, -2)).to(q.dtype)  # B|1 x H|1 x Tq x Tk
