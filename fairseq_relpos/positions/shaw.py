"""Shaw et al.'s relative positions and the reference study's variants (SPEC §1).

``e_ij = q_i·(k_j + a^K_ij)/√d_h`` and ``z_i = Σ_j α_ij (v_j + a^V_ij)`` with
``a^X_ij = w^X[clip(j - i, k)]``; tables shared across heads, separate per layer.

Neither term materialises a ``B x H x n x n x d_h`` tensor (Shaw §3.3):
keys: ``q·w^Kᵀ`` gives ``B x H x Tq x R`` (R distance rows), gathered by distance;
values: ``α`` is summed into its R distance rows, then multiplied by ``w^V``.
"""
import torch
from torch import nn

from . import register_scheme
from .base import AttentionPositions, relative_distance_index, sinusoids


class ShawPositions(AttentionPositions):
    use_keys = True
    use_values = True

    def __init__(self, context):
        super().__init__(context)
        k = context.max_relative_position
        self.num_distances = k + 1 if context.causal else 2 * k + 1
        self.add_tables()

    def add_tables(self):
        self.key_table = self._trained_table() if self.use_keys else None  # R x dh
        self.value_table = self._trained_table() if self.use_values else None  # R x dh

    def _trained_table(self):
        table = nn.Parameter(torch.empty(self.num_distances, self.context.head_dim))
        nn.init.xavier_uniform_(table)
        return table

    @property
    def has_value_term(self):
        return self.value_table is not None

    def _distance_index(self, q_start, q_len, k_len, device):
        return relative_distance_index(
            q_start, q_len, k_len, self.context.max_relative_position, self.context.causal, device
        )  # Tq x Tk

    def logit_bias(self, q, q_start, k_len):
        if self.key_table is None:
            return None
        bsz, heads, q_len, _ = q.shape
        per_distance = torch.matmul(q, self.key_table.to(q.dtype).t())  # B x H x Tq x R
        index = self._distance_index(q_start, q_len, k_len, q.device)
        return per_distance.gather(-1, index.expand(bsz, heads, q_len, k_len))  # B x H x Tq x Tk

    def value_term(self, probs, q_start):
        if self.value_table is None:
            return None
        bsz, heads, q_len, k_len = probs.shape
        index = self._distance_index(q_start, q_len, k_len, probs.device)
        per_distance = probs.new_zeros(bsz, heads, q_len, self.num_distances)
        per_distance.scatter_add_(-1, index.expand_as(probs), probs)  # B x H x Tq x R
        return torch.matmul(per_distance, self.value_table.to(probs.dtype))  # B x H x Tq x dh


@register_scheme("shaw")
class ShawKeyValuePositions(ShawPositions):
    """Relative positions on keys and values (004 "Relative")."""


@register_scheme("shaw_k")
class ShawKeyPositions(ShawPositions):
    """Relative positions on keys only (004 "γ^K-only"): a pure logit bias."""

    use_values = False


@register_scheme("shaw_v")
class ShawValuePositions(ShawPositions):
    """Relative positions on values only (Shaw's ablation)."""

    use_keys = False


@register_scheme("shaw_sin")
class ShawSinusoidPositions(ShawPositions):
    """Fixed tables: w^K[r] = w^V[r] = PE(r)[:d_h] of the signed distance r (004 eq. 8-9)."""

    def add_tables(self):
        k = self.context.max_relative_position
        distances = torch.arange(-k, -k + self.num_distances)  # R
        table = sinusoids(distances, self.context.head_dim, spectrum_dim=self.context.embed_dim)
        self.register_buffer("key_table", table, persistent=False)  # R x dh
        self.register_buffer("value_table", table, persistent=False)
