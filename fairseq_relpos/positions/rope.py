"""Rotary position embedding (Su et al. 2021): queries and keys are rotated by angles
proportional to their positions, so ``q·k`` depends only on ``p_j - p_i``; with the
scalings that stretch a trained model to longer inputs (position interpolation, NTK-aware
base scaling, YaRN).  ``docs/positions.md`` has the equations."""
import dataclasses
import math
from dataclasses import dataclass
from typing import Optional

import torch

from . import register_scheme
from .base import AttentionScheme

#: YaRN's ramp: dimensions turning fewer than BETA_SLOW times over the trained length are
#: interpolated, more than BETA_FAST times kept (Peng et al. 2023 §3.2; their defaults)
YARN_BETA_FAST, YARN_BETA_SLOW = 32, 1
#: the largest factor and trained length: float32 positions tell integers apart up to 2^24
#: (and ntk's base·factor^(d/(d-2)) stays a float64 number)
MAX_LENGTH = 2 ** 24


@register_scheme("rope")
class RotaryPositions(AttentionScheme):
    """Pairs ``(x_m, x_{m+d/2})`` rotate by ``p·θ_m`` at position ``p``, ``θ_m = base^(-2m/d)``
    (the half-split pairing of GPT-NeoX and LLaMA; Su et al. pair neighbours, which is the
    same rotation in a permuted basis of the learned projections).  Keys are cached rotated.

    ``scaling`` changes the frequencies by ``factor``, as transformers' ``rope_scaling`` does:
    ``pi`` divides them (Chen et al. 2023), ``ntk`` raises the base to
    ``base·factor^(d/(d-2))``, ``yarn`` interpolates only the slow dimensions and multiplies
    queries and keys by ``0.1·ln(factor) + 1`` (Peng et al. 2023).  None adds a parameter, so
    a model trained without scaling loads with it."""


    @dataclass(frozen=True)
    class Settings:
        base: float = 10000.0
        scaling: str = dataclasses.field(default="none", metadata={"choices": ("none", "pi", "ntk", "yarn")})
        factor: float = 1.0  # how much longer the inputs are than those trained on
        original: Optional[int] = None  # the length trained on (yarn's ramp)

        def __post_init__(self):
            if not (math.isfinite(self.base) and self.base > 1):  # nan fails every comparison
                raise ValueError(f"base must be a finite number > 1, got {self.base}")
            if not 1 <= self.factor <= MAX_LENGTH:
                raise ValueError(f"factor must be a finite number from 1 to {MAX_LENGTH}, got {self.factor}")
            if (self.scaling == "none") != (self.factor == 1):
                raise ValueError("scaling=pi|ntk|yarn and a factor > 1 go together, got "
                                 f"scaling={self.scaling}, factor={self.factor}")
            if (self.scaling == "yarn") != (self.original is not None):
                raise ValueError("original=N (the length trained on) is yarn's setting, and yarn needs it; got "
                                 f"scaling={self.scaling}, original={_text(self.original)}")
            if self.original is not None and not 1 <= self.original <= MAX_LENGTH:
                raise ValueError(f"original must be from 1 to {MAX_LENGTH}, got {self.original}")

    def __init__(self, settings, context):
        super().__init__(settings, context)
        if context.head_dim % 2 or context.head_dim < 4:
            raise ValueError(f"rope needs an even head dimension of at least 4, got {context.head_dim}")
        inv_freq, self.attention_factor = rotation_frequencies(settings, context.head_dim)
        self.register_buffer("inv_freq", inv_freq.float(), persistent=False)  # dh/2

    def rotate(self, x, span):  # B x H x Tq x dh
        def build():
            # a constant shift of a row's positions turns queries and keys alike: q·k keeps it out
            positions = span.queries.columns.to(self.inv_freq.dtype)  # Tq
            angles = positions.unsqueeze(1) * self.inv_freq  # Tq x dh/2
            return angles.cos() * self.attention_factor, angles.sin() * self.attention_factor

        # queries and keys of every layer turn by the same angles: computed once per pass
        cos, sin = (t.to(x.dtype) for t in span.once(("rope", self.settings), build))
        first, second = x.chunk(2, dim=-1)  # B x H x Tq x dh/2 each
        return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)


def rotation_frequencies(settings, head_dim: int):
    """``θ_m`` for ``m = 0 … d/2-1`` (float64) and the factor on queries and keys."""
    half = head_dim // 2
    exponents = torch.arange(half, dtype=torch.float64) / half  # 2m/d
    factor = settings.factor
    if settings.scaling == "ntk":
        return (settings.base * factor ** (head_dim / (head_dim - 2))) ** -exponents, 1.0
    inv_freq = settings.base ** -exponents
    if settings.scaling == "pi":
        return inv_freq / factor, 1.0
    if settings.scaling == "yarn":
        def ramp_dimension(turns):  # the dimension turning ``turns`` times over the trained length
            return head_dim * math.log(settings.original / (turns * 2 * math.pi)) / (2 * math.log(settings.base))

        low = max(math.floor(ramp_dimension(YARN_BETA_FAST)), 0)
        high = min(math.ceil(ramp_dimension(YARN_BETA_SLOW)), head_dim - 1)
        interpolated = ((torch.arange(half, dtype=torch.float64) - low) / max(high - low, 1e-3)).clamp(0, 1)
        return inv_freq * (1 - interpolated) + inv_freq / factor * interpolated, 0.1 * math.log(factor) + 1
    return inv_freq, 1.0


def _text(value):
    return "none" if value is None else value
