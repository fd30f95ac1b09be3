"""``--attention-impl flex``: the position terms of the schemes it covers (``flex_covered``:
each logit term of theirs has its kernel form, and they have no value term) computed inside
a FlexAttention kernel (``torch.nn.attention.flex_attention``): their biases
and factors as functions of the kernel's (batch, head, query, key) indices, reading tensors
of a few values per distance or head, and the key mask as a block mask, so that no
``B x H x Tq x Tk`` bias is built.  On a CUDA device the kernel is compiled (fused); on the
CPU FlexAttention runs unfused and has no backward pass (torch 2.13), so it serves
inference there.  The reference path stays the default (docs/performance.md).
"""
import functools
from typing import Dict, List, Optional

import torch
from torch import Tensor
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

from ..positions import SCHEMES, AttentionScheme, PositionSpec
from ..positions.base import AttentionSpan


def attend(q: Tensor, k: Tensor, v: Tensor, positions: AttentionScheme, span: AttentionSpan,
           key_mask) -> Optional[Tensor]:  # q, k, v: B x H x Tq|Tk x dh (q scaled); out B x H x Tq x dh
    """``softmax(((q·k)·factor + bias)·scale)·v`` over the keys ``key_mask`` (a
    :class:`~fairseq_relpos.modules.attention.KeyMask`) allows, in one kernel; None where
    the schemes have no term for a kernel (a rotation, a scale alone), which SDPA then
    serves as on the reference path."""
    factor = positions.flex_factor(span)
    bias = positions.flex_bias(q, k, span)
    if factor is None and bias is None:
        return None
    scale = positions.logit_scale(span)  # B|1 x H|1 x Tq x 1
    if scale is not None:
        scale = scale.expand(q.size(0), q.size(1), -1, -1).reshape(q.size(0), q.size(1), -1)  # B x H x Tq

    def score_mod(score, b, h, q_idx, kv_idx):
        logit = score
        if factor is not None:
            logit = logit * factor(b, h, q_idx, kv_idx)
        if bias is not None:
            logit = logit + bias(b, h, q_idx, kv_idx)
        if scale is not None:
            logit = logit * scale[b, h, q_idx]
        return logit.to(score.dtype)

    return _kernel(q.device.type)(q, k, v, score_mod=score_mod, block_mask=key_mask.block_mask, scale=1.0)


def block_mask(padding: Optional[Tensor], causal: bool, causal_offset: Optional[int], q_start: int, q_len: int,
               k_len: int, device):
    """A :class:`~fairseq_relpos.modules.attention.KeyMask` as a FlexAttention ``BlockMask``:
    query ``i`` sees the keys up to ``i + causal_offset`` (None: every key), of them the real
    ones where ``padding`` (B x Tk, True at padding) says (in causal attention, of real
    queries only, query ``i`` being key ``q_start + i``); None where it allows every key."""
    if padding is None and causal_offset is None:
        return None
    real = None if padding is None else ~padding  # B x Tk
    # positions as tensors, not Python numbers: one compiled mask serves every length
    offset = torch.tensor(0 if causal_offset is None else causal_offset, device=device)
    query_start = torch.tensor(q_start, device=device)

    def mask_mod(b, h, q_idx, kv_idx):
        if real is None:
            return kv_idx <= q_idx + offset
        seen = real[b, kv_idx]
        if causal:  # a padded query sees the padding too
            seen = seen | ~real[b, q_idx + query_start]
        return seen if causal_offset is None else seen & (kv_idx <= q_idx + offset)

    batch = None if padding is None else padding.size(0)
    return create_block_mask(mask_mod, batch, None, q_len, k_len, device=device)


@functools.lru_cache(maxsize=None)
def _kernel(device_type: str):
    """FlexAttention compiled into one fused kernel on CUDA (shapes turn dynamic after the
    first change of length, so that a kernel serves every batch); unfused on the CPU."""
    return torch.compile(flex_attention) if device_type == "cuda" else flex_attention


def covered_schemes():
    """The attention schemes ``--attention-impl flex`` covers."""
    return sorted(name for name, scheme in SCHEMES.items()
                  if issubclass(scheme, AttentionScheme) and scheme.flex_covered)


def uncovered(spec: PositionSpec) -> List[str]:
    """The attention schemes of ``spec`` that ``--attention-impl flex`` does not cover."""
    return [name for name, _ in spec.schemes
            if issubclass(SCHEMES[name], AttentionScheme) and not SCHEMES[name].flex_covered]


def check_flex(specs: Dict[str, PositionSpec], attention_dropout: float) -> None:
    """Refuses ``--attention-impl flex`` with a scheme it does not cover, or with attention
    dropout, which FlexAttention does not have; ``specs``: option -> its spec."""
    for option, spec in specs.items():
        names = uncovered(spec)
        if names:
            raise ValueError(
                f"--attention-impl flex does not cover {', '.join(names)} ({option} {spec}): expected "
                f"schemes among {', '.join(covered_schemes())} (docs/performance.md says why the others are "
                "not), or --attention-impl reference")
    if attention_dropout:
        raise ValueError(f"--attention-impl flex has no attention dropout (FlexAttention has none): expected "
                         f"--attention-dropout 0, got {attention_dropout}, or --attention-impl reference")


CPU_GRADIENTS = ("--attention-impl flex computes gradients on CUDA devices only (FlexAttention has no backward pass "
                 "on the CPU in torch 2.13)")


def refuse_gradients_on_cpu(device) -> None:
    """FlexAttention has no backward pass on the CPU: refused before a pass that would need it."""
    if device.type == "cpu" and torch.is_grad_enabled():
        raise ValueError(f"{CPU_GRADIENTS}: expected a CUDA device, torch.no_grad() (translation), or "
                         "--attention-impl reference")


def refuse_training_on_cpu(cpu: bool) -> None:
    """A training with flex on the CPU (``--cpu``, or no CUDA device), refused before it reads
    any data."""
    if cpu or not torch.cuda.is_available():
        raise ValueError(f"{CPU_GRADIENTS}, and this training runs on the CPU "
                         f"({'--cpu' if cpu else 'no CUDA device'}): train with --attention-impl reference (a model "
                         "trained so translates with flex on the CPU: --model-overrides \"{'attention_impl': 'flex'}\"), "
                         "or on a CUDA device")
