"""ALiBi (Press et al. 2022): ``-m_h·|j - i|`` added to the logits, with head slopes ``m_h``
in a geometric sequence; no parameters.  ``docs/positions.md`` has the equation."""
import math

import torch

from . import register_scheme
from .base import AttentionScheme
from .pairwise import absolute_distances


def alibi_slopes(num_heads: int):
    """Press et al.'s slopes: ``2^(-8h/H)`` for ``h = 1…H`` when H is a power of two; else
    those of the power of two below H, then every other slope of the one above."""

    def geometric(n):
        start = 2 ** (-8 / n)
        return [start ** (h + 1) for h in range(n)]

    below = 2 ** math.floor(math.log2(num_heads))
    if below == num_heads:
        return geometric(num_heads)
    return geometric(below) + alibi_slopes(2 * below)[0::2][: num_heads - below]


@register_scheme("alibi")
class ALiBi(AttentionScheme):
    """The encoder's bias is symmetric, ``-m_h·|j - i|``; the decoder's causal mask leaves
    ``-m_h·(i - j)`` for ``j <= i``.  The bias is the same in every layer: built once per pass."""

    def __init__(self, settings, context):
        super().__init__(settings, context)
        slopes = torch.tensor(alibi_slopes(context.num_heads))
        self.register_buffer("slopes", slopes.view(-1, 1, 1), persistent=False)  # H x 1 x 1

    def logit_bias(self, q, k, span):
        def build():
            return (-self.slopes * absolute_distances(span)).unsqueeze(0)  # 1 x H x Tq x Tk

        return span.once(self.name, build).to(q.dtype)
