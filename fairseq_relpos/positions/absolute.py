"""Absolute positions added to the embeddings: sinusoidal (``abs``, with SHAPE's training-time
shift as a setting) and learned (``abs_learned``).  ``docs/positions.md`` has the equations."""
from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn

from . import register_scheme
from .base import InputScheme, check_table, sinusoids, token_positions


#: leaves 2^23 positions above the largest offset before float32 stops telling them apart
MAX_SHIFT = 2 ** 23


@register_scheme("abs")
class SinusoidalPositions(InputScheme):
    """Vaswani et al.'s fixed sinusoids; defined for every position.

    ``shift=K`` is SHAPE (Kiyono et al. 2021): while training, every sequence's positions
    start at a random offset drawn uniformly from ``0 … K``, so the model cannot rely on
    absolute positions and learns shift-invariant attention; at inference there is no offset.
    """

    @dataclass(frozen=True)
    class Settings:
        shift: int = 0

        def __post_init__(self):
            if not 0 <= self.shift <= MAX_SHIFT:
                raise ValueError(f"shift must be between 0 and {MAX_SHIFT}, got {self.shift} (the sinusoids take "
                                 "float32 positions, exact only up to 2^24)")

    def forward(self, x, padding_mask, start=0, incremental_state=None):
        positions = token_positions(padding_mask, start)  # B x T
        if self.training and self.settings.shift > 0:
            offsets = torch.randint(0, self.settings.shift + 1, (x.size(0), 1), device=x.device)
            positions = positions + offsets
        encoding = sinusoids(positions, self.context.embed_dim).to(x.dtype)
        return x + encoding.masked_fill(padding_mask.unsqueeze(-1), 0)


@register_scheme("abs_learned")
class LearnedPositions(InputScheme):
    """One trained vector per position; it has none for positions beyond its table."""

    def __init__(self, settings, context):
        super().__init__(settings, context)
        self.table = nn.Embedding(context.max_positions, context.embed_dim)
        nn.init.normal_(self.table.weight, mean=0, std=context.embed_dim ** -0.5)

    def max_positions(self) -> Optional[int]:
        return self.context.max_positions

    def forward(self, x, padding_mask, start=0, incremental_state=None):
        positions = token_positions(padding_mask, start)
        longest = int(positions.max()) + 1 if positions.numel() else 0
        check_table(self, longest, self.context.max_positions, f"a sequence of {longest} tokens", "positions",
                    "learned absolute positions cannot extrapolate to longer inputs")
        return x + self.table(positions).masked_fill(padding_mask.unsqueeze(-1), 0)
