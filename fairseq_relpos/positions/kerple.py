"""KERPLE (Chi, Fan, Ramadge, Rudnicky 2022): a conditionally positive definite kernel of the
distance subtracted from the logits, with two trained parameters per head and layer;
``docs/positions.md`` has the equations and where the constraints follow the authors' code.

* ``kerple_log``:   ``e_ij -= r1·log(1 + r2·|j - i|)``,  ``r1, r2 > 0``
* ``kerple_power``: ``e_ij -= r1·|j - i|^r2``,          ``r1 > 0``, ``0 < r2 <= 2``
"""
from typing import Optional

import torch
from torch import nn

from . import register_scheme
from .base import AttentionScheme
from .pairwise import absolute_distances

#: the authors' lower bound of every parameter (their ``eps``)
LOWEST = 1e-2
#: the largest kernel used: exp(-2^15) is 0 in every float format, so no softmax weight
#: changes, and a float16 bias stays finite (a padded query far from every token would
#: otherwise see -inf everywhere and give nan)
HIGHEST_KERNEL = 2.0 ** 15


class _Bounded(torch.autograd.Function):
    """``value.clamp(low, high)`` whose gradient still reaches a value out of range when a
    descent step would bring it back.  The authors write the clamped value into the
    parameter in every forward pass; a plain clamp in the forward pass instead would give a
    parameter that an optimizer step pushed out of range no gradient, ever again."""

    @staticmethod
    def forward(ctx, value, low: float, high: Optional[float]):
        ctx.save_for_backward(value)
        ctx.low, ctx.high = low, high
        return value.clamp(low, high)

    @staticmethod
    def backward(ctx, grad):
        (value,) = ctx.saved_tensors
        # a descent step moves the value by -grad: only a push further out of range is dropped
        outward = (value < ctx.low) & (grad > 0)
        if ctx.high is not None:
            outward |= (value > ctx.high) & (grad < 0)
        return grad.masked_fill(outward, 0), None, None


def bounded(value: torch.Tensor, low: float, high: Optional[float] = None) -> torch.Tensor:
    return _Bounded.apply(value, low, high)


class _KernelBias(AttentionScheme):
    """``e_ij -= kernel(|j - i|)`` per head.  KERPLE is causal; the encoder's bias is the same
    kernel of ``|j - i|``, symmetric, as ``alibi``'s.  ``r1`` and ``r2`` (``H x 1 x 1`` per
    layer) start uniform in ``[0, scale)`` as in the authors' code (values below the bound
    act as the bound)."""

    r1_scale: float
    r2_scale: float
    r2_highest: Optional[float] = None

    def __init__(self, settings, context):
        super().__init__(settings, context)
        self.r1 = nn.Parameter(torch.rand(context.num_heads, 1, 1) * self.r1_scale)  # H x 1 x 1
        self.r2 = nn.Parameter(torch.rand(context.num_heads, 1, 1) * self.r2_scale)

    def logit_bias(self, q, k, span):
        r1, r2 = self._parameters_in_range()  # H x 1 x 1 each
        # in float32: |p_j - p_i|^2 of a few hundred tokens overflows float16
        distance = absolute_distances(span).unsqueeze(1).float()  # B|1 x 1 x Tq x Tk
        kernel = self.kernel(distance, r1, r2).clamp(max=HIGHEST_KERNEL)  # B|1 x H x Tq x Tk
        return -kernel.to(q.dtype)

    def flex_bias(self, q, k, span):
        r1, r2 = (value.view(-1) for value in self._parameters_in_range())  # H each
        distance = span.flex_relative_positions()
        kernel = self.kernel
        return lambda b, h, q_idx, kv_idx: -kernel(distance(b, q_idx, kv_idx).abs().float(), r1[h],
                                                   r2[h]).clamp(max=HIGHEST_KERNEL)

    def _parameters_in_range(self):
        return bounded(self.r1.float(), LOWEST), bounded(self.r2.float(), LOWEST, self.r2_highest)

    @staticmethod
    def kernel(distance, r1, r2):
        raise NotImplementedError


@register_scheme("kerple_log")
class KerpleLog(_KernelBias):
    # the authors' bias_p (r1) and bias_a (r2)
    r1_scale, r2_scale = 2.0, 1.0

    @staticmethod
    def kernel(distance, r1, r2):
        return r1 * torch.log1p(r2 * distance)


@register_scheme("kerple_power")
class KerplePower(_KernelBias):
    # the authors' bias_a (r1) and bias_p (r2), the exponent at most 2
    r1_scale, r2_scale, r2_highest = 1.0, 2.0, 2.0

    @staticmethod
    def kernel(distance, r1, r2):
        return r1 * distance.pow(r2)
