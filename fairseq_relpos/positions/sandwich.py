"""Sandwich (Chi, Fan, Rudnicky, Ramadge 2023): the inner product of the sinusoidal position
vectors of query and key, a parameter-free bias that decays with the distance, scaled per
head; ``docs/positions.md`` has the equation and the choices it leaves open."""
from dataclasses import dataclass
from typing import Optional

import torch

from . import register_scheme
from .base import AttentionScheme
from .pairwise import absolute_distances

#: beyond this, a larger dimension only costs memory (``|j - i|·dim/2`` cosines a pass)
MAX_DIM = 4096


@register_scheme("sandwich")
class Sandwich(AttentionScheme):
    """``e_ij += (p_i·p_j - d̄/2)·H/(8h)`` for head ``h = 1 … H``, with ``p`` the sinusoids of
    dimension ``d̄``: ``p_i·p_j = Σ_{m=1}^{d̄/2} cos((j - i)/10000^{2m/d̄})`` depends on the
    distance only and is even in it, so the encoder's bias is symmetric.  Subtracting
    ``d̄/2`` (its value at distance 0) changes no softmax and keeps the bias ≤ 0.  The bias
    is the same in every layer: built once per pass."""

    @dataclass(frozen=True)
    class Settings:
        dim: Optional[int] = None  # d̄; none: the head dimension d_h

        def __post_init__(self):
            if self.dim is not None and not (2 <= self.dim <= MAX_DIM and self.dim % 2 == 0):
                raise ValueError(f"dim must be an even number from 2 to {MAX_DIM} or none (the head "
                                 f"dimension), got {self.dim}")

    def __init__(self, settings, context):
        super().__init__(settings, context)
        dim = settings.dim or context.head_dim
        if dim % 2:
            raise ValueError(f"sandwich needs an even dim, and the head dimension is {dim}; set sandwich:dim=N")
        self.half_dim = dim // 2
        exponents = 2 * torch.arange(1, self.half_dim + 1, dtype=torch.float64) / dim
        self.register_buffer("frequencies", (10000.0 ** -exponents).float(), persistent=False)  # d̄/2
        heads = torch.arange(1, context.num_heads + 1, dtype=torch.float32)
        self.register_buffer("head_scales", (context.num_heads / (8 * heads)).view(-1, 1, 1),
                             persistent=False)  # H x 1 x 1


    def logit_bias(self, q, k, span):
        def build():
            return self._inner(span)[absolute_distances(span)].unsqueeze(1) * self.head_scales  # B|1 x H x Tq x Tk

        return span.once(self.name, build).to(q.dtype)

    def flex_bias(self, q, k, span):
        inner = span.once(("flex", self.name), lambda: self._inner(span))  # R
        distance = span.flex_absolute_distances(inner.numel() - 1)
        scales = self.head_scales.view(-1)  # H
        return lambda b, h, q_idx, kv_idx: inner[distance(b, q_idx, kv_idx)] * scales[h]

    def _inner(self, span):  # R: p_i·p_j - d̄/2 at the distances 0 … the call's longest
        distance = torch.arange(span.longest_distance() + 1, device=span.device, dtype=torch.float32)  # R
        return torch.cos(distance.unsqueeze(1) * self.frequencies).sum(-1) - self.half_dim
