"""Randomized positions (Ruoss et al. 2023) and SHAPE (Kiyono et al. 2021): while training,
the tokens of a sequence sit at positions drawn at random, which every other scheme of the
stack reads; at inference at ``0 … n-1``.  ``docs/positions.md`` has the details."""
from dataclasses import dataclass
from typing import Optional

import torch

from . import register_scheme
from .base import TrainingPositions

#: max and shift each at most 2^23: drawn positions stay below 2^24, up to which float32
#: (the positions of the sinusoids and rotations) still tells integers apart
MAX_DRAWN = 2 ** 23


@register_scheme("rand")
class RandomizedPositions(TrainingPositions):
    """``max=N``: the positions of a training batch are a sorted sample of distinct integers
    from ``[0, N)`` (Ruoss et al.), one sample shared by the batch's rows, so that distances
    stay one index for the batch.  ``shift=K``: each row's positions move by an offset drawn
    from ``0 … K`` (SHAPE; Kiyono et al. draw one per sequence), which no distance sees.
    Both: the sample, then the offsets."""

    @dataclass(frozen=True)
    class Settings:
        max: Optional[int] = None
        shift: int = 0

        def __post_init__(self):
            if self.max is not None and not 1 <= self.max <= MAX_DRAWN:
                raise ValueError(f"max must be between 1 and {MAX_DRAWN} or none, got {self.max} (positions are "
                                 "float32 in the sinusoids and rotations, exact only up to 2^24)")
            if not 0 <= self.shift <= MAX_DRAWN:
                raise ValueError(f"shift must be between 0 and {MAX_DRAWN}, got {self.shift} (positions are "
                                 "float32 in the sinusoids and rotations, exact only up to 2^24)")
            if self.max is None and self.shift == 0:
                raise ValueError("rand needs max=N (positions drawn from 0…N-1, Ruoss et al.) or shift=K "
                                 "(SHAPE's offsets 0…K), or both")

    def length_edges(self):
        # the first training sequence longer than the positions it draws from (refused)
        return [] if self.settings.max is None else [self.settings.max + 1]

    def reach(self):
        return None if self.settings.shift else self.settings.max

    def draw(self, batch_size, length, device):
        limit, shift = self.settings.max, self.settings.shift
        offsets = torch.randint(0, shift + 1, (batch_size, 1), device=device) if shift else None
        if limit is None:
            return torch.arange(length, device=device), offsets, 0
        if length > limit:
            raise ValueError(f"rand:max={limit} ({self.context.side}): a training sequence of {length} tokens needs "
                             f"{length} distinct positions; raise max")
        columns = torch.randperm(limit, device=device)[:length].sort().values  # T
        return columns, offsets, None
