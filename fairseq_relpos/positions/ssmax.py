"""Scalable-Softmax (Nakanishi 2025): the whole input of the softmax, content logits and
position biases alike, is multiplied by ``s_h·log n``, ``n`` the number of keys the query
attends to, so that attention does not fade as inputs grow; ``s_h`` is learned per head and
layer.  It carries no position itself and combines with any scheme (``rope+ssmax``);
``docs/positions.md`` has the details."""
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from . import register_scheme
from .base import AttentionScheme, AttentionSpan


def attended_keys(span: AttentionSpan) -> Tensor:  # B|1 x Tq
    """How many keys each query may attend to: the real (unpadded) keys of its row, in the
    decoder's self-attention only those up to the query; at least 1, so that a padded
    query's log stays 0.  Counted by index, not position: drawn positions keep the order."""
    if span.key_padding_mask is None:
        if span.causal:
            return torch.arange(span.q_start + 1, span.q_start + span.q_len + 1, device=span.device).unsqueeze(0)
        return torch.full((1, span.q_len), span.k_len, device=span.device)
    real = (~span.key_padding_mask.bool()).long()  # B x Tk
    if span.causal:
        counts = real.cumsum(dim=1)[:, span.q_start:]
    else:
        counts = real.sum(dim=1, keepdim=True).expand(-1, span.q_len)
    return counts.clamp(min=1)


#: the largest initial s: the logits times s·log n stay far from float16's and float32's limits
MAX_S = 100.0


@register_scheme("ssmax")
class ScalableSoftmax(AttentionScheme):
    """A decoding step counts the keys the teacher-forced pass counts for the same query, so
    cached decoding and beam search are unchanged by it.  It counts keys and reads no
    position, so it serves encoder-decoder attention too (``--cross-pos ssmax``, ``n`` the
    real tokens of the source), and drawn training positions (``rand``) change nothing in it."""

    reads_positions = False
    applies_across = True

    @dataclass(frozen=True)
    class Settings:
        s: float = 0.43  # initial s_h: the value of the paper's Figure 1

        def __post_init__(self):
            if not (0 < self.s <= MAX_S):
                raise ValueError(f"s must be a number in (0, {MAX_S}] (the logits are multiplied by s·log n: "
                                 f"beyond, they overflow), got {self.s}")

    def __init__(self, settings, context):
        super().__init__(settings, context)
        self.s = nn.Parameter(torch.full((context.num_heads, 1, 1), settings.s))  # H x 1 x 1

    def logit_scale(self, span):
        log_keys = span.once("log attended keys", lambda: attended_keys(span).float().log())  # B|1 x Tq
        return self.s * log_keys[:, None, :, None]  # B|1 x H x Tq x 1
