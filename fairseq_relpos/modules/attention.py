"""The attention module every position scheme plugs into: self-attention, and
encoder-decoder attention where ``--cross-pos`` gives it position schemes."""
import math
from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from fairseq.incremental_decoding_utils import with_incremental_state
from torch import Tensor, nn

from ..positions.base import AttentionScheme, AttentionSpan, IncrementalState, PassMemo, Positions


class _PositionedAttention(nn.Module):
    """Multi-head attention with an optional :class:`AttentionScheme` (one scheme, or a
    chain of several); the module itself knows no scheme.

    When the scheme only rotates, biases or scales the logits (or there is none) and no
    weights are asked for, attention runs in ``F.scaled_dot_product_attention`` with the bias
    as a float mask (a scale multiplies the queries and the bias); a logit transform or a
    value term needs the explicit softmax.  ``memo`` is the stack's :class:`PassMemo`,
    through which layers share position terms.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        positions: Optional[AttentionScheme] = None,
        causal: bool = False,
        memo: Optional[PassMemo] = None,
        kdim: Optional[int] = None,  # width of the keys' and values' input; default embed_dim
    ):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.dropout = dropout
        self.positions = positions
        self.causal = causal
        self.memo = memo or PassMemo()
        kdim = kdim or embed_dim
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(kdim, embed_dim)
        self.v_proj = nn.Linear(kdim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.reset_parameters()

    def reset_parameters(self):
        # as fairseq's MultiheadAttention: scaled when queries, keys and values have one width
        gain = 1 / math.sqrt(2) if self.k_proj.in_features == self.embed_dim else 1.0
        for proj in (self.q_proj, self.k_proj, self.v_proj):
            nn.init.xavier_uniform_(proj.weight, gain=gain)
        nn.init.xavier_uniform_(self.out_proj.weight)
        nn.init.constant_(self.out_proj.bias, 0.0)

    def _attend(
        self, q: Tensor, k: Tensor, v: Tensor, span: AttentionSpan, need_weights: bool
    ) -> Tuple[Tensor, Optional[Tensor]]:  # B x H x Tq x dh each; out B x H x Tq x dh, weights B x H x Tq x Tk
        positions = self.positions
        bias = positions.logit_bias(q, k, span) if positions is not None else None
        scale = positions.logit_scale(span) if positions is not None else None  # B|1 x H|1 x Tq x 1
        if scale is not None:
            scale = scale.to(q.dtype)
        mask = self._additive_mask(span, q.dtype)  # B|1 x 1 x Tq x Tk, or None
        dropout = self.dropout if self.training else 0.0

        transforms_logits = positions is not None and positions.transforms_logits
        has_value_term = positions is not None and positions.has_value_term
        if not (need_weights or transforms_logits or has_value_term):
            # the kernel scales q·k by one number: a factor per query row goes into q
            attn_mask = _plus(_scaled(bias, scale), mask)
            out = F.scaled_dot_product_attention(_scaled(q, scale), k, v, attn_mask=attn_mask, dropout_p=dropout,
                                                 scale=1.0)
            return out, None
        logits = torch.matmul(q, k.transpose(-1, -2))  # B x H x Tq x Tk
        if transforms_logits:
            logits = positions.transform_logits(logits, q, k, span)
        # the mask comes after the scale: a factor of 0 (a single key, log 1) must not turn -inf into nan
        logits = _plus(_scaled(_plus(logits, bias), scale), mask)
        weights = torch.softmax(logits.float(), dim=-1).type_as(logits)
        probs = F.dropout(weights, p=dropout, training=self.training)
        out = torch.matmul(probs, v)  # B x H x Tq x dh
        if has_value_term:
            out = out + positions.value_term(probs, span)
        return out, weights

    def _split_heads(self, x: Tensor) -> Tensor:
        length, bsz, _ = x.shape
        return x.view(length, bsz, self.num_heads, self.head_dim).permute(1, 2, 0, 3)  # B x H x T x dh

    def _merge_heads(self, out: Tensor) -> Tensor:  # B x H x Tq x dh
        bsz, _, length, _ = out.shape
        return self.out_proj(out.permute(2, 0, 1, 3).reshape(length, bsz, self.embed_dim))  # Tq x B x C

    def _additive_mask(self, span: AttentionSpan, dtype) -> Optional[Tensor]:
        blocked = None  # B|1 x 1 x Tq x Tk, True where a query may not look
        if self.causal and span.q_len > 1:  # a single query is the last one: it sees every key
            blocked = (span.distances(0, 1) > 0)[None, None]
        if span.key_padding_mask is not None:
            padding = span.key_padding_mask.to(torch.bool)[:, None, None, :]
            blocked = padding if blocked is None else blocked | padding
        if blocked is None:
            return None
        return torch.zeros(blocked.shape, dtype=dtype, device=span.device).masked_fill(blocked, float("-inf"))

    def _cache(self, incremental_state) -> Dict[str, Tensor]:
        if incremental_state is None:
            return {}
        return self.get_incremental_state(incremental_state, "attn_state") or {}

    def reorder_incremental_state(self, incremental_state, new_order: Tensor):
        cache = self.get_incremental_state(incremental_state, "attn_state")
        if cache is not None:
            reordered = {name: value.index_select(0, new_order) if value.dim() else value
                         for name, value in cache.items()}
            self.set_incremental_state(incremental_state, "attn_state", reordered)
        return incremental_state


@with_incremental_state
class RelPosSelfAttention(_PositionedAttention):
    """Self-attention: takes and returns fairseq's time-first ``T x B x C`` layout.
    Incremental decoding caches projected (and rotated) keys and values; queries of a step
    then sit at ``k_len - q_len …``, which is how several tokens per step keep their
    distances right."""

    def forward(
        self,
        x: Tensor,  # Tq x B x C
        key_padding_mask: Optional[Tensor] = None,  # B x Tq, True at padding
        incremental_state: IncrementalState = None,
        need_weights: bool = False,
        key_positions: Optional[Positions] = None,  # of the keys, cached and new; None: 0 … k_len-1
    ) -> Tuple[Tensor, Optional[Tensor]]:  # Tq x B x C, B x H x Tq x Tk
        q_len, bsz, _ = x.shape
        q = self._split_heads(self.q_proj(x)) * self.scaling  # B x H x Tq x dh
        k = self._split_heads(self.k_proj(x))
        v = self._split_heads(self.v_proj(x))
        cache = self._cache(incremental_state)
        q_start = cache["prev_key"].size(2) if "prev_key" in cache else 0
        key_padding_mask = self._keys_padding(cache, key_padding_mask, bsz, q_len)  # B x Tk, or None
        span = AttentionSpan(q_start, q_len, q_start + q_len, self.causal, key_padding_mask, q.device, self.memo,
                             keys=key_positions)
        if self.positions is not None:  # rotations act at the tokens' positions, before the cache
            q, k = self.positions.rotate(q, span), self.positions.rotate(k, span)
        if incremental_state is not None:
            k, v = self._extend_cache(incremental_state, cache, k, v, key_padding_mask)
        out, weights = self._attend(q, k, v, span, need_weights)  # k, v: B x H x Tk x dh
        return self._merge_heads(out), weights

    @staticmethod
    def _keys_padding(cache, key_padding_mask, bsz, q_len) -> Optional[Tensor]:
        """The padding of every key: the cached ones', then the new ones'."""
        prev_mask = cache.get("prev_key_padding_mask")
        if "prev_key" not in cache or (prev_mask is None and key_padding_mask is None):
            return key_padding_mask
        prev_len = cache["prev_key"].size(2)
        device = cache["prev_key"].device
        if prev_mask is None:
            prev_mask = torch.zeros(bsz, prev_len, dtype=torch.bool, device=device)
        if key_padding_mask is None:
            key_padding_mask = torch.zeros(bsz, q_len, dtype=torch.bool, device=device)
        return torch.cat([prev_mask, key_padding_mask.to(torch.bool)], dim=1)

    def _extend_cache(self, incremental_state, cache, k, v, key_padding_mask):
        if "prev_key" in cache:
            k = torch.cat([cache["prev_key"], k], dim=2)
            v = torch.cat([cache["prev_value"], v], dim=2)
        state: Dict[str, Optional[Tensor]] = {"prev_key": k, "prev_value": v}
        if key_padding_mask is not None:
            state["prev_key_padding_mask"] = key_padding_mask
        self.set_incremental_state(incremental_state, "attn_state", state)
        return k, v


@with_incremental_state
class RelPosCrossAttention(_PositionedAttention):
    """Encoder-decoder attention with position schemes (``--cross-pos``), called as fairseq's
    ``MultiheadAttention`` is for it; without such schemes the decoder keeps fairseq's own
    module, which cannot take a bias per head and sentence.

    Queries are target tokens at ``0, 1, …`` (counting the steps of incremental decoding),
    keys the source tokens at their positions among the real tokens of their row.  The
    source's projected keys and values are computed once and cached while decoding."""

    def forward(
        self,
        query: Tensor,  # Tq x B x C
        key: Optional[Tensor],  # Ts x B x C_enc (the encoder's output)
        value: Optional[Tensor],
        key_padding_mask: Optional[Tensor] = None,  # B x Ts, True at padding
        incremental_state: IncrementalState = None,
        static_kv: bool = True,
        need_weights: bool = False,
        need_head_weights: bool = False,
    ) -> Tuple[Tensor, Optional[Tensor]]:  # Tq x B x C; H x B x Tq x Ts (or its mean over heads)
        if not static_kv:
            raise ValueError("RelPosCrossAttention attends to the encoder's output: static_kv must be True")
        q_len = query.size(0)
        q = self._split_heads(self.q_proj(query)) * self.scaling  # B x H x Tq x dh
        cache = self._cache(incremental_state)
        if "prev_key" in cache:
            k, v, key_padding_mask = cache["prev_key"], cache["prev_value"], cache.get("prev_key_padding_mask")
            q_start = int(cache["steps"])
        else:
            k, v = self._split_heads(self.k_proj(key)), self._split_heads(self.v_proj(value))  # B x H x Ts x dh
            q_start = 0
        if incremental_state is not None:
            state = {"prev_key": k, "prev_value": v, "steps": torch.tensor(q_start + q_len)}
            if key_padding_mask is not None:
                state["prev_key_padding_mask"] = key_padding_mask
            self.set_incremental_state(incremental_state, "attn_state", state)
        source_len = k.size(2)
        span = AttentionSpan(
            q_start, q_len, source_len, False, key_padding_mask, q.device, self.memo,
            # the layers of a pass share the source's positions
            keys=self.memo.get(("source_positions", source_len),
                               lambda: Positions.counting(source_len, q.device, key_padding_mask)),
            queries=Positions(torch.arange(q_start, q_start + q_len, device=q.device), start=q_start),
        )
        out, weights = self._attend(q, k, v, span, need_weights or need_head_weights)
        if weights is not None:
            weights = weights.transpose(0, 1)  # H x B x Tq x Ts
            if not need_head_weights:
                weights = weights.mean(dim=0)
        return self._merge_heads(out), weights


def _plus(x: Optional[Tensor], y: Optional[Tensor]) -> Optional[Tensor]:
    return x if y is None else y if x is None else x + y


def _scaled(x: Optional[Tensor], scale: Optional[Tensor]) -> Optional[Tensor]:
    return x if x is None or scale is None else x * scale
