"""Length buckets with the study's inclusive ranges.

Edges ``25,50,75,100`` give G0:25 (0 <= J <= 25), G26:50, G51:75, G76:100 and G101:inf:
each edge is the inclusive upper end of a bucket and the last bucket is open.

A length *band* ``LO:HI`` is a closed bucket that a system is trained on, or tested on, in
the band matrix (relpos_analysis.bands_model); the recipes filter training pairs by the same
bands (relpos_recipes.tools.filter_pairs --band).
"""
import math
from dataclasses import dataclass
from typing import List, Optional, Sequence

from .io import InputError

DEFAULT_EDGES = (25, 50, 75, 100)


def default_edges(train_limit: Optional[int]) -> List[int]:
    """The edges of a report's or a board's buckets where none are given: the study's
    DEFAULT_EDGES, or with a training limit limit_edges."""
    return list(DEFAULT_EDGES) if train_limit is None else limit_edges(train_limit)


def limit_edges(limit: int) -> List[int]:
    """The default edges of a report given a training limit: within the limit, then up to 1.5,
    2 and 3 times it, and beyond."""
    return sorted({limit, limit * 3 // 2, limit * 2, limit * 3})


@dataclass(frozen=True)
class Bucket:
    lo: int
    hi: Optional[int]  # inclusive; None: open-ended

    @property
    def label(self) -> str:
        return f"G{self.lo}:{'∞' if self.hi is None else self.hi}"

    @property
    def latex_label(self) -> str:
        upper = "$\\infty$" if self.hi is None else self.hi
        return f"{self.lo}--{upper}"

    def contains(self, length: int) -> bool:
        return self.lo <= length and (self.hi is None or length <= self.hi)


def parse_band(text: str) -> Bucket:
    """``"11:20"`` -> the band of lengths 11 to 20, both included (1 <= LO <= HI)."""
    lo, colon, hi = text.strip().partition(":")
    if not (colon and lo.isdigit() and hi.isdigit() and 1 <= int(lo) <= int(hi)):
        raise InputError(f"expected a length band LO:HI with 1 <= LO <= HI (e.g. 11:20), got {text.strip()!r}")
    return Bucket(int(lo), int(hi))


def parse_bands(text: str) -> List[Bucket]:
    """``"1:10,11:20"`` -> bands (check_bands)."""
    bands = [parse_band(part) for part in text.split(",")]
    check_bands(bands)
    return bands


def check_bands(bands: Sequence[Bucket]) -> None:
    """None twice, none overlapping another: a sentence's length falls in one band at most."""
    ordered = sorted(bands, key=lambda band: band.lo)
    for before, after in zip(ordered, ordered[1:]):
        if after.lo <= before.hi:
            raise InputError(f"the bands {band_spec(before)} and {band_spec(after)} overlap; expected bands of "
                             "distinct lengths, e.g. 1:10,11:20")


def band_spec(band: Bucket) -> str:
    """A band as the options write it: ``LO:HI``."""
    return f"{band.lo}:{band.hi}"


def parse_edges(text: str) -> List[int]:
    """``"25,50,75,100"`` -> [25, 50, 75, 100]; ``"none"`` (one bucket for all) -> []."""
    if text.strip().lower() in ("", "none"):
        return []
    try:
        return [int(edge) for edge in text.split(",")]
    except ValueError:
        raise InputError(f"bucket edges must be comma-separated integers, got {text!r}") from None


def buckets_from_edges(edges: Sequence[int]) -> List[Bucket]:
    if any(edge < 0 for edge in edges):
        raise InputError(f"bucket edges must not be negative: {_join(edges)}")
    if any(later <= earlier for earlier, later in zip(edges, edges[1:])):
        raise InputError(f"bucket edges must be strictly increasing: {_join(edges)}")
    lows = [0] + [edge + 1 for edge in edges]
    highs: List[Optional[int]] = list(edges) + [None]
    return [Bucket(lo, hi) for lo, hi in zip(lows, highs)]


def quantile_edges(lengths: Sequence[int], n_buckets: int) -> List[int]:
    """Edges that split ``lengths`` into ``n_buckets`` buckets of equal size, as far as
    ties allow (equal lengths always share a bucket, so there may be fewer buckets)."""
    if n_buckets < 1:
        raise InputError(f"--quantiles needs at least 1 bucket, got {n_buckets}")
    ordered = sorted(lengths)
    edges: List[int] = []
    for k in range(1, n_buckets):
        edge = ordered[math.ceil(k * len(ordered) / n_buckets) - 1]
        # the open last bucket must not end up empty
        if edge < ordered[-1] and (not edges or edge > edges[-1]):
            edges.append(edge)
    return edges


def bucket_members(lengths: Sequence[int], buckets: Sequence[Bucket]) -> List[List[int]]:
    """Sentence indices falling into each bucket, in corpus order."""
    members: List[List[int]] = [[] for _ in buckets]
    for index, length in enumerate(lengths):
        for bucket, bucket_indices in zip(buckets, members):
            if bucket.contains(length):
                bucket_indices.append(index)
                break
    return members


def _join(edges: Sequence[int]) -> str:
    return ",".join(str(edge) for edge in edges)
