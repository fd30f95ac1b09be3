"""T5's bucketed relative bias (Raffel et al. 2020; Chen et al. 2021 eq. 4): a scalar per
head and distance bucket added to the logits; ``docs/positions.md`` has the equation."""
import math
from dataclasses import dataclass

import torch
from torch import nn

from . import register_scheme, sharing
from .base import AttentionScheme, head_rows


@register_scheme("t5")
class T5Bias(AttentionScheme):
    """Distances ``j - i`` fall into ``buckets`` log-spaced buckets up to ``max_distance``:
    exact below half of them, logarithmic beyond, the last bucket for everything farther.
    The encoder gives each sign half of the buckets; the decoder sees only ``j <= i``.
    The table is laid out ``buckets x heads`` as in T5 and shared by the layers of a stack."""

    @dataclass(frozen=True)
    class Settings:
        buckets: int = 32
        max_distance: int = 128
        heads: str = sharing("separate", "one bias per head, or one for all heads")
        layers: str = sharing("shared", "one table for the whole stack (T5), or one per layer")

        def __post_init__(self):
            if self.buckets < 4 or self.buckets % 2:
                raise ValueError(f"buckets must be an even number >= 4, got {self.buckets}")
            if self.max_distance <= self.buckets // 2:
                raise ValueError(f"max_distance must exceed buckets/2 = {self.buckets // 2}, got {self.max_distance}")

    def __init__(self, settings, context):
        super().__init__(settings, context)
        heads = context.num_heads if settings.heads == "separate" else 1
        self.table = nn.Parameter(torch.empty(settings.buckets, heads))  # buckets x H|1
        nn.init.normal_(self.table, std=context.embed_dim ** -0.5)

    def bucket(self, distance):  # any shape of j - i, long -> bucket ids
        buckets = self.settings.buckets
        if self.context.causal:
            offset, magnitude = 0, (-distance).clamp(min=0)
        else:
            buckets //= 2
            offset, magnitude = (distance > 0).long() * buckets, distance.abs()
        exact = buckets // 2
        # T5 computes the logarithmic buckets in float32 and truncates: kept, so that a
        # distance falls into the same bucket as in T5
        logarithmic = exact + (
            torch.log(magnitude.float() / exact) / math.log(self.settings.max_distance / exact) * (buckets - exact)
        ).long()
        logarithmic = logarithmic.clamp(max=buckets - 1)
        return offset + torch.where(magnitude < exact, magnitude, logarithmic)


    def length_edges(self):
        # the first length of each bucket: a distance d first occurs in a sequence of d + 1 tokens
        # (keys before the query: the side both stacks have, bucketed as the other side is)
        distances = torch.arange(self.settings.max_distance + 2)
        buckets = self.bucket(-distances)
        return (torch.nonzero(buckets[1:] != buckets[:-1]).view(-1) + 2).tolist()

    def logit_bias(self, q, k, span):
        lowest, highest = span.distance_range()

        def build():
            # indexed along the last dimension: the bias is contiguous in the keys, as fused kernels need
            return self._per_distance(lowest, highest, span)[:, span.distances(lowest, highest)].unsqueeze(0)

        # layers that share the table share the bias too: it is built once per pass
        return span.once(self, build).to(q.dtype)  # 1 x H|1 x Tq x Tk

    def flex_bias(self, q, k, span):
        lowest, highest = span.distance_range()
        table = span.once(("flex", self), lambda: head_rows(self._per_distance(lowest, highest, span),
                                                                 self.context.num_heads))  # H x R
        row = span.flex_distances(lowest, highest)
        return lambda b, h, q_idx, kv_idx: table[h, row(b, q_idx, kv_idx)]

    def _per_distance(self, lowest, highest, span):  # H|1 x R: the bias of each distance lowest … highest
        return self.table[self.bucket(torch.arange(lowest, highest + 1, device=span.device))].t()
