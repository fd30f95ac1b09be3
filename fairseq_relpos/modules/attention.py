"""The attention module every position scheme plugs into: self-attention, and
encoder-decoder attention (with position schemes where ``--cross-pos`` gives it some).

Which kernel a call reaches (docs/performance.md): ``F.scaled_dot_product_attention`` when
the schemes only rotate, bias or scale the logits and no weights are asked for, given what
CUDA's fused kernels take (no mask at all for the causal self-attention of a full decoder
pass, which ``is_causal`` says; a boolean key mask for padding, built once per pass; a bias
contiguous in the keys); the explicit softmax for logit transforms, value terms and
weights; with ``--attention-impl flex``, a FlexAttention kernel that computes the covered
schemes' terms itself (``modules/flex.py``).
"""
import functools
import math
from contextlib import contextmanager
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from fairseq.incremental_decoding_utils import with_incremental_state
from torch import Tensor, nn
from torch.nn.attention import SDPBackend

from ..positions.base import AttentionScheme, AttentionSpan, IncrementalState, PassMemo, Positions
from . import flex

#: ``--attention-impl``: the reference path (SDPA, the explicit softmax), or FlexAttention
#: for the schemes it covers
ATTENTION_IMPLS = ("reference", "flex")


class KeyMask:
    """Which keys each query of a call may attend to; built once per pass, shared by its layers.

    Causal attention blocks the keys after each query, and padding the padded keys of real
    queries.  A padded query of causal attention sees the keys up to it, padding included
    (so that it never sees none, which would give nan): its output is finite and never read
    (the loss ignores padding, and no real query sees it).  Over right-padded rows
    (fairseq's targets) every key a real query may see is real, so padding needs no mask:
    the causal self-attention of a full decoder pass then needs none at all, only SDPA's
    ``is_causal``."""

    def __init__(self, span: AttentionSpan):
        padding = span.key_padding_mask  # B x Tk, True at padding
        if padding is not None:
            padding = padding.to(torch.bool)
            if span.causal and not _pads_before_tokens(padding):
                padding = None
        self.padding = padding
        # query i sits at key causal_offset + i; a single query is the last one: it sees every key
        self.causal_offset = span.q_start if span.causal and span.q_len > 1 else None
        self.causal = span.causal
        self.q_start, self.q_len, self.k_len, self.device = span.q_start, span.q_len, span.k_len, span.device
        # causal from query 0 is square (self-attention: k_len = q_start + q_len)
        self.is_causal = self.causal_offset == 0 and padding is None

    @functools.cached_property
    def blocked(self) -> Optional[Tensor]:  # B|1 x 1 x Tq x Tk, True where a query may not look; None: nowhere
        blocked = None
        if self.causal_offset is not None:
            queries = torch.arange(self.causal_offset, self.causal_offset + self.q_len, device=self.device)
            blocked = (torch.arange(self.k_len, device=self.device) > queries.unsqueeze(1))[None, None]
        if self.padding is not None:
            padding = self.padding[:, None, None, :]  # B x 1 x 1 x Tk
            if self.causal:  # only real queries: the call's queries are its last keys
                padding = padding & ~self.padding[:, self.q_start:, None].unsqueeze(1)  # B x 1 x Tq x Tk
            blocked = padding if blocked is None else blocked | padding
        return blocked

    @functools.cached_property
    def sdpa_mask(self) -> Optional[Tensor]:
        """SDPA's ``attn_mask`` where there is no bias: none where ``is_causal`` says it all,
        else the keys each query may look at (boolean, ``B|1 x 1 x Tq|1 x Tk``)."""
        return None if self.is_causal or self.blocked is None else ~self.blocked

    @functools.cached_property
    def block_mask(self):
        """The mask as FlexAttention's ``BlockMask`` (``--attention-impl flex``); None: nothing blocked."""
        return flex.block_mask(self.padding, self.causal, self.causal_offset, self.q_start, self.q_len, self.k_len,
                               self.device)


def _pads_before_tokens(padding: Tensor) -> bool:
    """Whether a row of the ``B x T`` padding mask (boolean) has padding before a real token."""
    return bool((padding[:, :-1] & ~padding[:, 1:]).any())


class _PositionedAttention(nn.Module):
    """Multi-head attention with an optional :class:`AttentionScheme` (one scheme, or a
    chain of several); the module itself knows no scheme.

    A scale per query (``logit_scale``) multiplies the queries and the bias on the SDPA path.
    A call's ``memo`` is the :class:`PassMemo` of the stack's pass, through which its layers
    share position terms and the key mask; a call given none makes its own.
    """

    #: the order in which the projections are created and initialised (it decides what a
    #: seed gives them)
    projection_order = ("q", "k", "v")

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        positions: Optional[AttentionScheme] = None,
        causal: bool = False,
        kdim: Optional[int] = None,  # width of the keys' and values' input; default embed_dim
        impl: str = "reference",  # --attention-impl
    ):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        if impl not in ATTENTION_IMPLS:
            raise ValueError(f"--attention-impl {impl!r}: expected one of {', '.join(ATTENTION_IMPLS)}")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.dropout = dropout
        self.positions = positions
        self.causal = causal
        self.impl = impl
        input_dims = {"q": embed_dim, "k": kdim or embed_dim, "v": kdim or embed_dim}
        for name in self.projection_order:
            setattr(self, f"{name}_proj", nn.Linear(input_dims[name], embed_dim))
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.reset_parameters()

    def reset_parameters(self):
        # as fairseq's MultiheadAttention: scaled when queries, keys and values have one width
        gain = 1 / math.sqrt(2) if self.k_proj.in_features == self.embed_dim else 1.0
        for name in self.projection_order:
            nn.init.xavier_uniform_(getattr(self, f"{name}_proj").weight, gain=gain)
        nn.init.xavier_uniform_(self.out_proj.weight)
        nn.init.constant_(self.out_proj.bias, 0.0)

    def _attend(
        self, q: Tensor, k: Tensor, v: Tensor, span: AttentionSpan, need_weights: bool
    ) -> Tuple[Tensor, Optional[Tensor]]:  # B x H x Tq x dh each; out B x H x Tq x dh, weights B x H x Tq x Tk
        positions = self.positions
        mask = self._key_mask(span)
        if self.impl == "flex" and positions is not None and not need_weights:
            out = flex.attend(q, k, v, positions, span, mask)
            if out is not None:
                _record(self, lambda: "flex")
                return out, None
        bias = positions.logit_bias(q, k, span) if positions is not None else None
        scale = positions.logit_scale(span) if positions is not None else None  # B|1 x H|1 x Tq x 1
        if scale is not None:
            scale = scale.to(q.dtype)
        dropout = self.dropout if self.training else 0.0

        transforms_logits = positions is not None and positions.transforms_logits
        has_value_term = positions is not None and positions.has_value_term
        if not (need_weights or transforms_logits or has_value_term):
            # the kernel scales q·k by one number: a factor per query row goes into q
            if bias is None:
                attn_mask, is_causal = mask.sdpa_mask, mask.is_causal
            else:
                attn_mask, is_causal = _bias_mask(_scaled(bias, scale), mask.blocked), False
            return self._sdpa(_scaled(q, scale), k, v, attn_mask, dropout, is_causal), None
        _record(self, lambda: "explicit")
        # every term below writes into this one tensor, and the softmax reads it in place
        logits = torch.matmul(q, k.transpose(-1, -2))  # B x H x Tq x Tk
        if transforms_logits:
            logits = positions.transform_logits(logits, q, k, span)
        if bias is not None:
            logits = logits.add_(bias)
        if scale is not None:
            logits = logits * scale  # its gradient needs the logits before it: not in place
        if mask.blocked is not None:
            # after the scale: a factor of 0 (a single key, log 1) must not turn -inf into nan
            logits = logits.masked_fill_(mask.blocked, float("-inf"))
        # a float32 softmax of fp16 logits: on a GPU its output is the one float32 copy
        weights = torch.softmax(logits, dim=-1, dtype=torch.float32).to(logits.dtype)
        probs = F.dropout(weights, p=dropout, training=self.training)
        out = torch.matmul(probs, v)  # B x H x Tq x dh
        if has_value_term:
            out = out + positions.value_term(probs, span)
        return out, weights

    def _sdpa(self, q, k, v, attn_mask, dropout, is_causal) -> Tensor:
        with _without_cudnn_for_masked_gradients(q, attn_mask):
            _record(self, lambda: sdpa_backend(q, k, v, attn_mask, dropout, is_causal))
            return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout,
                                                  is_causal=is_causal, scale=1.0)

    def _key_mask(self, span: AttentionSpan) -> KeyMask:
        padding = span.key_padding_mask
        # the memo holds the padding mask, so that no other tensor takes its id while the pass lasts
        return span.once(("key mask", id(padding)), lambda: (padding, KeyMask(span)))[1]

    def _split_heads(self, x: Tensor) -> Tensor:
        length, bsz, _ = x.shape
        return x.view(length, bsz, self.num_heads, self.head_dim).permute(1, 2, 0, 3)  # B x H x T x dh

    def _merge_heads(self, out: Tensor) -> Tensor:  # B x H x Tq x dh
        bsz, _, length, _ = out.shape
        return self.out_proj(out.permute(2, 0, 1, 3).reshape(length, bsz, self.embed_dim))  # Tq x B x C

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
        memo: Optional[PassMemo] = None,  # of the stack's pass
    ) -> Tuple[Tensor, Optional[Tensor]]:  # Tq x B x C, B x H x Tq x Tk
        q_len, bsz, _ = x.shape
        q = self._split_heads(self.q_proj(x)) * self.scaling  # B x H x Tq x dh
        k = self._split_heads(self.k_proj(x))
        v = self._split_heads(self.v_proj(x))
        cache = self._cache(incremental_state)
        q_start = cache["prev_key"].size(2) if "prev_key" in cache else 0
        key_padding_mask = self._keys_padding(cache, key_padding_mask, bsz, q_len)  # B x Tk, or None
        span = AttentionSpan(q_start, q_len, q_start + q_len, self.causal, key_padding_mask, q.device,
                             PassMemo() if memo is None else memo, keys=key_positions)
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
    """Encoder-decoder attention, called as fairseq's ``MultiheadAttention`` is for it, with
    its parameters under its names (``q_proj``, ``k_proj``, ``v_proj``, ``out_proj``), so
    that checkpoints of either load into the other, created and initialised in its order,
    so that a seed gives the model it gave; position schemes where ``--cross-pos`` gives some.
    fairseq's module takes its explicit path for encoder-decoder attention; this one reaches
    SDPA's fused kernels as self-attention does.

    Queries are target tokens at ``0, 1, …`` (counting the steps of incremental decoding),
    keys the source tokens at their positions among the real tokens of their row.  The
    source's projected keys and values are computed once and cached while decoding."""

    projection_order = ("k", "v", "q")

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
        memo: Optional[PassMemo] = None,  # of the stack's pass, for its encoder-decoder attention
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
        memo = PassMemo() if memo is None else memo
        span = AttentionSpan(
            q_start, q_len, source_len, False, key_padding_mask, q.device, memo,
            # the layers of a pass share the source's positions
            keys=memo.get(("source_positions", source_len),
                          lambda: Positions.counting(source_len, q.device, key_padding_mask)),
            queries=Positions(torch.arange(q_start, q_start + q_len, device=q.device), start=q_start),
        )
        out, weights = self._attend(q, k, v, span, need_weights or need_head_weights)
        if weights is not None:
            weights = weights.transpose(0, 1)  # H x B x Tq x Ts
            if not need_head_weights:
                weights = weights.mean(dim=0)
        return self._merge_heads(out), weights


# --- which kernel ran ------------------------------------------------------------------------
_kernel_log: Optional[List[Tuple[nn.Module, str]]] = None


@contextmanager
def recorded_kernels():
    """While open, each attention call appends ``(module, kernel)`` to the list it yields:
    the SDPA backend PyTorch's dispatcher chooses for the call's inputs
    (``flash_attention``, ``efficient_attention``, ``cudnn_attention``, ``math``; on a CPU,
    ``flash_attention`` is its own fused kernel), ``explicit`` (matmul and softmax) or
    ``flex``.  For benchmarks and tests: nothing is recorded while it is closed."""
    global _kernel_log
    outer, _kernel_log = _kernel_log, []
    try:
        yield _kernel_log
    finally:
        _kernel_log = outer


def _record(module: nn.Module, kernel):  # kernel: a function naming it, called only while recording
    if _kernel_log is not None:
        _kernel_log.append((module, kernel()))


def sdpa_backend(q, k, v, attn_mask, dropout, is_causal) -> str:
    """The backend ``F.scaled_dot_product_attention`` takes for these inputs: the
    dispatcher's own choice (``torch._fused_sdp_choice``)."""
    choice = torch._fused_sdp_choice(q, k, v, attn_mask, dropout, is_causal, scale=1.0)
    return SDPBackend(choice).name.lower()


@contextmanager
def _without_cudnn_for_masked_gradients(q: Tensor, attn_mask: Optional[Tensor]):
    """A call with a mask whose gradients autograd will ask for runs without cuDNN's kernel,
    on the memory-efficient one: cuDNN's backward returns nan query gradients for masked
    calls over 64 mod 128 keys on Hopper GPUs (pytorch/pytorch#196678; seen with torch 2.11
    and cuDNN 9.19 on an H200, docs/performance.md).  Other calls keep every kernel the user
    left enabled."""
    if attn_mask is None or not (torch.is_grad_enabled() and q.requires_grad) or \
            not torch.backends.cuda.cudnn_sdp_enabled():
        yield
        return
    torch.backends.cuda.enable_cudnn_sdp(False)
    try:
        yield
    finally:
        torch.backends.cuda.enable_cudnn_sdp(True)


#: CUDA's memory-efficient kernel copies a mask whose rows do not start at multiples of this many elements
MASK_ROW_ALIGNMENT = 8


def _bias_mask(bias: Tensor, blocked: Optional[Tensor]) -> Tensor:  # B|1 x H|1 x Tq x Tk
    """The bias with -inf where ``blocked``, contiguous in the keys (every fused CUDA kernel
    needs it) and written into rows that start at multiples of :data:`MASK_ROW_ALIGNMENT`
    elements, so that the memory-efficient kernel does not copy it once more."""
    keys = bias.size(-1)
    if blocked is None and bias.stride(-1) == 1 and all(
            stride % MASK_ROW_ALIGNMENT == 0 for stride in bias.stride()[:-1]):
        return bias
    shape = bias.shape if blocked is None else torch.broadcast_shapes(bias.shape, blocked.shape)
    # a new tensor in the standard layout: F.pad keeps its input's layout, and a bias of one
    # query and one key laid out heads-last (B x H x 1 x 1, the heads' stride 1) counts as
    # channels-last, whose keys are then not contiguous (a first decoding step of FIRE's)
    aligned = bias.new_empty(*shape[:-1], keys + -keys % MASK_ROW_ALIGNMENT)[..., :keys].copy_(bias)
    return aligned if blocked is None else aligned.masked_fill_(blocked, float("-inf"))


def _scaled(x: Optional[Tensor], scale: Optional[Tensor]) -> Optional[Tensor]:
    return x if x is None or scale is None else x * scale
