"""The two interfaces every position scheme implements, and the helpers they share.

A scheme lives in one of two places (SPEC §1):

* :class:`InputPositions` changes the token embeddings before the first layer
  (``abs``, ``abs_learned``, ``lstm``);
* :class:`AttentionPositions` adds terms inside one self-attention layer: a bias on the
  logits and/or a term on the attention output (``shaw`` and its variants).

Self-attention numbers its keys ``0 … k_len-1`` and its queries
``q_start … q_start+q_len-1`` with ``q_start = k_len - q_len``: a full pass has
``q_start = 0``; an incremental decoding step that adds ``q_len`` tokens to a cache of
``q_start`` keys has the same numbering, so a scheme never needs to know which case it is in.
"""
import functools
import math
from dataclasses import dataclass
from typing import Dict, List, Optional

import torch
from torch import Tensor, nn

IncrementalState = Optional[Dict[str, Dict[str, Optional[Tensor]]]]


@dataclass(frozen=True)
class PositionContext:
    """What a scheme may need to know about the stack it is built into."""

    embed_dim: int
    num_heads: int
    num_layers: int
    causal: bool  # decoder self-attention: a query never sees later keys
    max_relative_position: int  # k, the clipping distance of relative schemes
    max_positions: int  # capacity of tables indexed by absolute position

    @property
    def head_dim(self) -> int:
        return self.embed_dim // self.num_heads


class InputPositions(nn.Module):
    """Adds position information to scaled token embeddings before the first layer."""

    def __init__(self, context: PositionContext):
        super().__init__()
        self.context = context

    def max_positions(self) -> Optional[int]:
        """Longest sequence this scheme can encode; ``None`` when unbounded."""
        return None

    def forward(
        self,
        x: Tensor,  # B x T x C
        padding_mask: Tensor,  # B x T, True at padding
        start: int = 0,  # tokens of this sequence already processed (incremental decoding)
        incremental_state: IncrementalState = None,
    ) -> Tensor:  # B x T x C
        raise NotImplementedError


class AttentionPositions(nn.Module):
    """Position terms of one self-attention layer; the defaults add nothing."""

    #: whether :meth:`value_term` is used; it needs the attention probabilities, so
    #: attention cannot go through the fused scaled-dot-product kernel.
    has_value_term = False

    def __init__(self, context: PositionContext):
        super().__init__()
        self.context = context

    @classmethod
    def build_layers(cls, context: PositionContext) -> List["AttentionPositions"]:
        """One instance per layer: tables separate per layer unless a scheme shares them."""
        return [cls(context) for _ in range(context.num_layers)]

    def logit_bias(
        self,
        q: Tensor,  # B x H x Tq x dh, already scaled by 1/sqrt(dh)
        q_start: int,
        k_len: int,
    ) -> Optional[Tensor]:  # broadcastable to B x H x Tq x Tk
        return None

    def value_term(
        self,
        probs: Tensor,  # B x H x Tq x Tk, attention probabilities after dropout
        q_start: int,
    ) -> Optional[Tensor]:  # B x H x Tq x dh, added to probs @ V
        return None


def sinusoids(positions: Tensor, dim: int, spectrum_dim: Optional[int] = None) -> Tensor:
    """Vaswani et al.'s sinusoidal encoding of (possibly negative) ``positions``.

    Returns ``positions.shape + (dim,)`` with ``PE[p, 2i] = sin(p / 10000^(2i/spectrum_dim))``
    and ``PE[p, 2i+1] = cos(…)``.  ``spectrum_dim`` defaults to ``dim``; the relative
    sinusoidal scheme takes the first ``d_head`` components of a ``d_model`` encoding
    (004 eq. 8), i.e. ``dim = d_head`` with ``spectrum_dim = d_model``.  Computed on the
    fly, so any position works: there is no table to outgrow.
    """
    spectrum_dim = spectrum_dim or dim
    even_indices = torch.arange(0, dim, 2, device=positions.device, dtype=torch.float32)
    inv_freq = torch.exp(even_indices * (-math.log(10000.0) / spectrum_dim))  # ceil(dim/2)
    angles = positions.float().unsqueeze(-1) * inv_freq  # ... x ceil(dim/2)
    interleaved = torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(-2)
    return interleaved[..., :dim]


# Every layer of a pass, and both the key and the value term of a layer, read the same index
# (never written to), so it is built once per (step, shape, device).
@functools.lru_cache(maxsize=32)
def relative_distance_index(
    q_start: int, q_len: int, k_len: int, max_distance: int, causal: bool, device
) -> Tensor:
    """Row of the distance table each (query, key) pair reads: ``clip(j - i, k) + k``.

    Returns a ``q_len x k_len`` LongTensor.  Causal attention only ever sees distances
    ``-k … 0`` (later keys are masked), so its table has ``k + 1`` rows and positive
    distances are clipped to 0.
    """
    queries = torch.arange(q_start, q_start + q_len, device=device)
    keys = torch.arange(k_len, device=device)
    distance = keys.unsqueeze(0) - queries.unsqueeze(1)  # Tq x Tk
    upper = 0 if causal else max_distance
    return distance.clamp(-max_distance, upper) + max_distance
