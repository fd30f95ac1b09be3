"""ALiBi (Press et al. 2022): ``-m_h·|p_j - p_i|`` added to the logits, with head slopes
``m_h`` in a geometric sequence; and Marian's form of it, with trained slopes and offsets,
which also serves encoder-decoder attention (``--cross-pos alibi``).
``docs/positions.md`` has the equations."""
import math
from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn

from . import register_scheme
from .base import AttentionScheme
from .pairwise import absolute_distances, signed_distances

#: Marian's starting slope and offset of every head in encoder-decoder attention
#: (src/layers_new/alibi.h, AlibiDecoderAttentionMaskProcessor without the causal mask)
MARIAN_CROSS_SLOPE, MARIAN_CROSS_OFFSET = 0.1, 0.3
#: a steeper slope already gives every key but the nearest a softmax weight of 0 (exp(-2^15)
#: is 0 in every float format)
MAX_SLOPE = 2 ** 15
#: an offset beyond every distance float32 positions tell apart (2^24) moves nothing further
MAX_OFFSET = 2 ** 24


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
    """``-|m_h|·|p_j - p_i + b_h|``.  In self-attention by default Press et al.'s: fixed
    geometric slopes, no offset; the encoder's bias is symmetric, the decoder's causal mask
    leaves ``-m_h·(p_i - p_j)``.  In encoder-decoder attention by default Marian's: slopes
    and offsets trained per head and layer, from 0.1 and 0.3, on the distance from the
    target position to the source position.  Fixed, the bias is the same in every layer and
    built once per pass."""

    applies_across = True

    @dataclass(frozen=True)
    class Settings:
        trainable: Optional[bool] = None  # default: false in self-attention, true across (Marian)
        slope: Optional[float] = None  # every head's (first) slope; default: Press et al.'s, 0.1 across
        offset: Optional[float] = None  # b_h (first value); default: 0, 0.3 across

        def __post_init__(self):
            if self.slope is not None and not 0 < self.slope <= MAX_SLOPE:  # nan fails every comparison
                raise ValueError(f"slope must be a finite number > 0 and at most {MAX_SLOPE}, got {self.slope}")
            if self.offset is not None and not -MAX_OFFSET <= self.offset <= MAX_OFFSET:
                raise ValueError(f"offset must be a finite number from -{MAX_OFFSET} to {MAX_OFFSET}, "
                                 f"got {self.offset}")

    def __init__(self, settings, context):
        super().__init__(settings, context)
        heads = context.num_heads
        across = context.cross
        if settings.slope is not None:
            slopes = [settings.slope] * heads
        else:
            slopes = [MARIAN_CROSS_SLOPE] * heads if across else alibi_slopes(heads)
        offset = settings.offset if settings.offset is not None else (MARIAN_CROSS_OFFSET if across else 0.0)
        self.trainable = settings.trainable if settings.trainable is not None else across
        slopes = torch.tensor(slopes).view(-1, 1, 1)  # H x 1 x 1
        offsets = torch.full((heads, 1, 1), float(offset))  # H x 1 x 1
        if self.trainable:
            self.slopes, self.offsets = nn.Parameter(slopes), nn.Parameter(offsets)
        else:
            self.register_buffer("slopes", slopes, persistent=False)
            self.register_buffer("offsets", None if offset == 0 else offsets, persistent=False)

    def logit_bias(self, q, k, span):
        def build():
            if self.offsets is None:
                distance = absolute_distances(span).unsqueeze(1)  # B|1 x 1 x Tq x Tk
            else:
                distance = (signed_distances(span).unsqueeze(1) + self.offsets).abs()  # B|1 x H x Tq x Tk
            return -self.slopes.abs() * distance.to(self.slopes.dtype)  # B|1 x H x Tq x Tk

        # fixed slopes make the same bias in every layer; trained ones are the layer's own
        return span.once(self if self.trainable else self.name, build).to(q.dtype)

    def flex_bias(self, q, k, span):
        distance = span.flex_relative_positions()
        slopes = self.slopes.abs().view(-1)  # H
        if self.offsets is None:
            return lambda b, h, q_idx, kv_idx: -slopes[h] * distance(b, q_idx, kv_idx).abs()
        offsets = self.offsets.view(-1)  # H
        return lambda b, h, q_idx, kv_idx: -slopes[h] * (distance(b, q_idx, kv_idx) + offsets[h]).abs()
