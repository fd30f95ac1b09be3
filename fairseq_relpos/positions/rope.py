"""Rotary position embedding (Su et al. 2021): queries and keys are rotated by angles
proportional to their absolute positions, so ``q·k`` depends only on ``j - i``.
``docs/positions.md`` has the equation."""
import math
from dataclasses import dataclass

import torch

from . import register_scheme
from .base import AttentionScheme


@register_scheme("rope")
class RotaryPositions(AttentionScheme):
    """Pairs ``(x_m, x_{m+d/2})`` rotate by ``p·base^(-2m/d)`` at position ``p`` (the
    half-split pairing of GPT-NeoX and LLaMA; Su et al. pair neighbours, which is the same
    rotation in a permuted basis of the learned projections).  Keys are cached rotated."""

    @dataclass(frozen=True)
    class Settings:
        base: float = 10000.0

        def __post_init__(self):
            if not (math.isfinite(self.base) and self.base > 1):  # nan fails every comparison
                raise ValueError(f"base must be a finite number > 1, got {self.base}")

    def __init__(self, settings, context):
        super().__init__(settings, context)
        if context.head_dim % 2:
            raise ValueError(f"rope needs an even head dimension, got {context.head_dim}")
        half = context.head_dim // 2
        inv_freq = settings.base ** (-torch.arange(half, dtype=torch.float64) / half)
        self.register_buffer("inv_freq", inv_freq.float(), persistent=False)  # dh/2

    def rotate(self, x, start, memo):  # B x H x T x dh
        length = x.size(2)

        def build():
            positions = torch.arange(start, start + length, device=x.device, dtype=torch.float32)
            angles = positions.unsqueeze(1) * self.inv_freq  # T x dh/2
            return angles.cos(), angles.sin()

        # queries and keys of every layer turn by the same angles: computed once per pass
        cos, sin = (t.to(x.dtype) for t in memo.get(("rope", start, length, self.settings.base), build))
        first, second = x.chunk(2, dim=-1)  # B x H x T x dh/2 each
        return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)
