"""Absolute positions added to the embeddings: sinusoidal (``abs``) and learned (``abs_learned``)."""
from typing import Optional

import torch
from torch import Tensor, nn

from . import register_scheme
from .base import InputPositions, sinusoids


def token_positions(padding_mask: Tensor, start: int) -> Tensor:
    """Position of each token among the non-padding tokens of its row, counting from
    ``start``; padding wherever it sits (fairseq left-pads sources) takes no position."""
    is_token = (~padding_mask).long()  # B x T
    return (torch.cumsum(is_token, dim=1) - 1 + start) * is_token


@register_scheme("abs")
class SinusoidalPositions(InputPositions):
    """Vaswani et al.'s fixed sinusoids; defined for every position."""

    def forward(self, x, padding_mask, start=0, incremental_state=None):
        positions = token_positions(padding_mask, start)
        encoding = sinusoids(positions, self.context.embed_dim).to(x.dtype)
        return x + encoding.masked_fill(padding_mask.unsqueeze(-1), 0)


@register_scheme("abs_learned")
class LearnedPositions(InputPositions):
    """One trained vector per position; it has none for positions beyond its table."""

    def __init__(self, context):
        super().__init__(context)
        self.table = nn.Embedding(context.max_positions, context.embed_dim)
        nn.init.normal_(self.table.weight, mean=0, std=context.embed_dim ** -0.5)

    def max_positions(self) -> Optional[int]:
        return self.context.max_positions

    def forward(self, x, padding_mask, start=0, incremental_state=None):
        positions = token_positions(padding_mask, start)
        longest = int(positions.max()) + 1 if positions.numel() else 0
        if longest > self.context.max_positions:
            raise ValueError(
                f"abs_learned: a sequence of {longest} tokens exceeds the learned position "
                f"table of {self.context.max_positions} positions (--max-source-positions / "
                "--max-target-positions at training time); learned absolute positions cannot "
                "extrapolate to longer inputs"
            )
        return x + self.table(positions).masked_fill(padding_mask.unsqueeze(-1), 0)
