"""FIRE (Li et al., ICLR 2024): a learned function of the log-distance, normalised by the log
of the query's context, ``b(i, j) = f_θ(ψ(i - j) / ψ(max(L, i)))`` with ``ψ(x) = log(c·x + 1)``;
``docs/positions.md`` has the equations and the encoder's (bidirectional) form."""
import math
from dataclasses import dataclass

import torch
from torch import nn

from . import register_scheme, sharing
from .base import AttentionScheme
from .pairwise import first_chunked_length, in_query_chunks, signed_distances


@register_scheme("fire")
class FIRE(AttentionScheme):
    """``f_θ``: an MLP ``1 → width → H`` with a ReLU; ``c`` and the threshold ``L`` (a trained
    multiplier of its initial value) are learned, as in the paper's appendix code.  One per
    layer unless ``layers=shared``.

    Decoder, the paper's causal form: ``i`` counts the tokens before the query, so inputs lie
    in ``[0, 1]``.  Encoder: a key after the query is normalised by the tokens after the
    query instead, and its input is negated, so inputs lie in ``[-1, 1]`` and the MLP tells
    the two sides apart.  Positions count the real tokens of a row: left padding changes
    nothing; a stack with ``rand`` reads its drawn positions instead while training.

    The input depends on the query's position, not on the distance alone, so the MLP runs on
    every (query, key) pair, in chunks of queries of at most ``pairwise_chunk_elements``
    hidden units, recomputed in the backward pass rather than kept."""

    @dataclass(frozen=True)
    class Settings:
        width: int = 32  # hidden units of f_θ (the paper's)
        c: float = 0.1  # initial c (the paper's)
        threshold: float = 512.0  # initial L (the paper's)
        layers: str = sharing("separate", "an MLP per layer, or one for the whole stack")

        def __post_init__(self):
            if not 1 <= self.width <= 1024:
                raise ValueError(f"width must be from 1 to 1024, got {self.width}")
            if not (math.isfinite(self.c) and self.c > 0):
                raise ValueError(f"c must be a finite number > 0, got {self.c}")
            if not (math.isfinite(self.threshold) and self.threshold >= 0):
                raise ValueError(f"threshold must be a finite number >= 0, got {self.threshold}")

    pairwise_chunk_elements = 2 ** 24  # 64 MiB of float32 per chunk
    eps = 1e-6  # the paper's: keeps ψ(max(L, i)) away from 0

    def __init__(self, settings, context):
        super().__init__(settings, context)
        self.mlp = nn.Sequential(nn.Linear(1, settings.width), nn.ReLU(), nn.Linear(settings.width, context.num_heads))
        self.c = nn.Parameter(torch.tensor(settings.c))
        self.threshold_scale = nn.Parameter(torch.tensor(1.0))  # L = |threshold_scale · threshold|

    def length_edges(self):
        # the first length with a query whose context exceeds the threshold L (normalised by
        # log(c·i + 1), not by log(c·L + 1)), and the first computed in several chunks
        threshold = abs(self.threshold_scale.item() * self.settings.threshold)
        return sorted([math.floor(threshold) + 2, first_chunked_length(self.pairwise_chunk_elements,
                                                                       self.settings.width)])

    def logit_bias(self, q, k, span):
        # layers that share the MLP share the bias too: it is built once per pass
        return span.once(self, lambda: self._bias(span)).to(q.dtype)

    def _bias(self, span):
        distance = signed_distances(span).float()  # B|1 x Tq x Tk, p_j - p_i
        # a position counts the tokens before it (at inference; drawn ones while training with rand)
        positions = span.key_token_positions()  # B|1 x Tk
        before = positions[:, span.q_start:].unsqueeze(-1).float()  # B|1 x Tq x 1: the queries' positions
        if span.causal:
            context = before
        else:
            after = positions.max(dim=1, keepdim=True).values.unsqueeze(-1) - before  # B|1 x Tq x 1
            context = torch.where(distance > 0, after, before)  # B|1 x Tq x Tk
        c = self.c.float().abs()
        threshold = (self.threshold_scale.float() * self.settings.threshold).abs()

        def psi(x):
            return torch.log(c * x + 1)

        inputs = -distance.sign() * psi(distance.abs()) / (psi(torch.maximum(context, threshold)) + self.eps)
        inputs = inputs.to(self.mlp[0].weight.dtype).unsqueeze(-1)  # B|1 x Tq x Tk x 1

        def chunk_bias(first, last):  # B|1 x c x Tk x H
            return self.mlp(inputs[:, first:last])

        per_query = inputs.size(0) * span.k_len * self.settings.width
        bias = in_query_chunks(chunk_bias, span.q_len, per_query, self.pairwise_chunk_elements, dim=1)
        # contiguous in the keys, as fused kernels need the bias
        return bias.permute(0, 3, 1, 2).contiguous()  # B|1 x H x Tq x Tk
