"""Shaw et al.'s relative positions and the reference study's variants (``docs/positions.md``).

``e_ij = q_i·(k_j + a^K_ij)/√d_h`` and ``z_i = Σ_j α_ij (v_j + a^V_ij)`` with
``a^X_ij = w^X[clip(j - i, k)]``; tables shared across heads (``heads=separate`` gives each
head its own), separate per layer.

Neither term materialises a ``B x H x n x n x d_h`` tensor (Shaw §3.3), and neither costs
more than the input needs: of the ``2k + 1`` rows only the ``R`` distances the input has are
used (``k`` may be as large as ``--max-*-positions`` - 1):
keys: ``q·w^Kᵀ`` gives ``B x H x Tq x R``, gathered by distance;
values: ``α`` is summed into its R distance rows, then multiplied by ``w^V``.
"""
from dataclasses import dataclass

import torch
from torch import nn

from . import register_scheme, sharing
from .base import AttentionScheme, check_reach, flex_reached_rows, reached_rows, sinusoids, xavier_per_head


def per_head(table):
    """A table stored ``R x dh`` (shared by the heads, the first release's layout, which its
    checkpoints hold) or ``H x R x dh``, as ``H|1 x R x dh``."""
    return table if table.dim() == 3 else table.unsqueeze(0)


@dataclass(frozen=True)
class ShawSettings:
    k: int = 16  # clipping distance (Rosendahl et al. 2019 and Shaw et al.'s base model)
    heads: str = sharing("shared", "one table for all heads, or one per head")
    layers: str = sharing("separate", "one table per layer, or one for the whole stack")

    def __post_init__(self):
        if self.k < 1:
            raise ValueError(f"k (the clipping distance, --max-relative-position) must be >= 1, got {self.k}")


class ShawPositions(AttentionScheme):
    """The tables of Shaw's terms; :class:`ShawKeyTerm` and :class:`ShawValueTerm` add the
    terms, and with them their tables."""

    Settings = ShawSettings
    family = "shaw"

    def __init__(self, settings, context):
        super().__init__(settings, context)
        check_reach(self, settings.k, "k")
        # causal attention never sees positive distances: its table stops at 0
        self.highest = 0 if context.causal else settings.k
        self.num_distances = self.highest + settings.k + 1
        self.add_tables()

    def length_edges(self):
        return [self.settings.k + 2]  # the first length with a distance beyond k, clipped

    def add_tables(self):
        self.key_table = self._trained_table() if isinstance(self, ShawKeyTerm) else None  # [H x] R x dh
        self.value_table = self._trained_table() if isinstance(self, ShawValueTerm) else None  # [H x] R x dh

    def _trained_table(self):
        shape = (self.num_distances, self.context.head_dim)
        if self.settings.heads == "separate":
            shape = (self.context.num_heads,) + shape
        return xavier_per_head(nn.Parameter(torch.empty(shape)))

    def _reached(self, table, span):
        """The rows of ``table`` this call reaches (``H|1 x R x dh``) and each (query, key)
        pair's row among them (``Tq x Tk``)."""
        rows, index = reached_rows(span, -self.settings.k, self.highest)
        return per_head(table)[:, rows], index


class ShawKeyTerm(ShawPositions):
    """``q_i·a^K_ij``: a logit bias."""

    def logit_bias(self, q, k, span):
        table, index = self._reached(self.key_table, span)
        per_distance = _with_each_row(q, table)  # B x H x Tq x R
        return per_distance.gather(-1, index.expand(q.size(0), q.size(1), -1, -1))  # B x H x Tq x Tk

    def flex_bias(self, q, k, span):
        rows, row = flex_reached_rows(span, -self.settings.k, self.highest)
        per_distance = _with_each_row(q, per_head(self.key_table)[:, rows])  # B x H x Tq x R
        return lambda b, h, q_idx, kv_idx: per_distance[b, h, q_idx, row(b, q_idx, kv_idx)]


class ShawValueTerm(ShawPositions):
    """``Σ_j α_ij a^V_ij``: a value term."""

    def value_term(self, probs, span):
        table, index = self._reached(self.value_table, span)
        bsz, heads, q_len, _ = probs.shape
        per_distance = probs.new_zeros(bsz, heads, q_len, table.size(1))
        per_distance.scatter_add_(-1, index.expand_as(probs), probs)  # B x H x Tq x R
        return torch.matmul(per_distance, table.to(probs.dtype))  # B x H x Tq x dh


def _with_each_row(q, table):  # B x H x Tq x dh, H|1 x R x dh -> B x H x Tq x R: q_i·w[r] for every row r
    return torch.matmul(q, table.to(q.dtype).transpose(-1, -2))


@register_scheme("shaw")
class ShawKeyValuePositions(ShawKeyTerm, ShawValueTerm):
    """Relative positions on keys and values (Rosendahl et al.'s "Relative")."""


@register_scheme("shaw_k")
class ShawKeyPositions(ShawKeyTerm):
    """Relative positions on keys only (Rosendahl et al.'s "γ^K-only"): a pure logit bias."""


@register_scheme("shaw_v")
class ShawValuePositions(ShawValueTerm):
    """Relative positions on values only (Shaw et al.'s ablation)."""


@register_scheme("shaw_sin")
class ShawSinusoidPositions(ShawKeyTerm, ShawValueTerm):
    """Fixed tables: w^K[r] = w^V[r] = PE(r)[:d_h] of the signed distance r (Rosendahl et al.
    eq. 8-9).  Nothing is trained, so the sharing settings change nothing."""

    def add_tables(self):
        distances = torch.arange(-self.settings.k, self.highest + 1)  # R
        table = sinusoids(distances, self.context.head_dim, spectrum_dim=self.context.embed_dim)
        self.register_buffer("key_table", table, persistent=False)  # R x dh
        self.register_buffer("value_table", table, persistent=False)
