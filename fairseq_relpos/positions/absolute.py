"""Absolute positions added to the embeddings: sinusoidal (``abs``) and learned
(``abs_learned``).  ``docs/positions.md`` has the equations."""
from typing import Optional

from torch import nn

from . import register_scheme
from .base import InputScheme, check_table, sinusoids


@register_scheme("abs")
class SinusoidalPositions(InputScheme):
    """Vaswani et al.'s fixed sinusoids; defined for every position.  SHAPE (Kiyono et al.
    2021), which the first releases spelt ``abs:shift=K``, is ``rand:shift=K``: the spec
    reads the one as the other."""

    def forward(self, x, padding_mask, positions=None, incremental_state=None):
        positions = self.token_positions(padding_mask, positions)  # B x T
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

    def forward(self, x, padding_mask, positions=None, incremental_state=None):
        positions = self.token_positions(padding_mask, positions)  # B x T
        needed = int(positions.max()) + 1 if positions.numel() else 0
        check_table(self, needed, self.context.max_positions, f"position {needed - 1}", "positions",
                    "learned absolute positions cannot extrapolate to longer inputs")
        return x + self.table(positions).masked_fill(padding_mask.unsqueeze(-1), 0)
