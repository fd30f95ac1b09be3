"""Encoder and decoder layers around :class:`RelPosSelfAttention` and
:class:`RelPosCrossAttention`.

Parameter names follow fairseq's Transformer layers (``self_attn``, ``encoder_attn``,
``fc1``, ``fc2``, ``*_layer_norm``); encoder-decoder attention holds fairseq's
``MultiheadAttention``'s parameters under their names, with position schemes where
``--cross-pos`` gives it some (docs/positions.md).
"""
from typing import Callable, Optional

from fairseq import utils
from fairseq.modules import FairseqDropout, LayerNorm
from torch import Tensor, nn

from ..positions.base import AttentionScheme, IncrementalState, PassMemo, Positions
from .attention import RelPosCrossAttention, RelPosSelfAttention


class FeedForward(nn.Module):
    def __init__(self, embed_dim, ffn_dim, activation_fn, activation_dropout):
        super().__init__()
        self.fc1 = nn.Linear(embed_dim, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, embed_dim)
        self.activation_fn = utils.get_activation_fn(activation_fn)
        self.activation_dropout = FairseqDropout(activation_dropout, module_name="FeedForward")

    def forward(self, x):
        return self.fc2(self.activation_dropout(self.activation_fn(self.fc1(x))))


def _activation_dropout(cfg) -> float:
    # as fairseq's layers: --relu-dropout is the older name, used when --activation-dropout is 0
    return cfg.activation_dropout or cfg.relu_dropout or 0.0


class ResidualBlock(nn.Module):
    """``x + dropout(sublayer(x))`` with layer norm before (pre-norm) or after (post-norm)."""

    def __init__(self, embed_dim, dropout, normalize_before):
        super().__init__()
        self.layer_norm = LayerNorm(embed_dim)
        self.dropout = FairseqDropout(dropout, module_name="ResidualBlock")
        self.normalize_before = normalize_before

    def forward(self, x: Tensor, sublayer: Callable[[Tensor], Tensor]) -> Tensor:
        if self.normalize_before:
            return x + self.dropout(sublayer(self.layer_norm(x)))
        return self.layer_norm(x + self.dropout(sublayer(x)))


class RelPosEncoderLayer(nn.Module):
    def __init__(self, cfg, positions: Optional[AttentionScheme], attention_impl: str = "reference"):
        super().__init__()
        embed_dim = cfg.encoder.embed_dim
        self.self_attn = RelPosSelfAttention(
            embed_dim, cfg.encoder.attention_heads, cfg.attention_dropout, positions, causal=False,
            impl=attention_impl,
        )
        self.self_attn_block = ResidualBlock(embed_dim, cfg.dropout, cfg.encoder.normalize_before)
        self.ffn = FeedForward(embed_dim, cfg.encoder.ffn_embed_dim, cfg.activation_fn, _activation_dropout(cfg))
        self.ffn_block = ResidualBlock(embed_dim, cfg.dropout, cfg.encoder.normalize_before)

    def forward(self, x: Tensor, encoder_padding_mask: Optional[Tensor],
                token_positions: Optional[Positions] = None, memo: Optional[PassMemo] = None) -> Tensor:  # T x B x C
        x = self.self_attn_block(
            x, lambda h: self.self_attn(h, encoder_padding_mask, key_positions=token_positions, memo=memo)[0])
        return self.ffn_block(x, self.ffn)


class RelPosDecoderLayer(nn.Module):
    def __init__(self, cfg, positions: Optional[AttentionScheme], cross_positions: Optional[AttentionScheme] = None,
                 attention_impl: str = "reference"):
        super().__init__()
        embed_dim = cfg.decoder.embed_dim
        normalize_before = cfg.decoder.normalize_before
        self.self_attn = RelPosSelfAttention(
            embed_dim, cfg.decoder.attention_heads, cfg.attention_dropout, positions, causal=True,
            impl=attention_impl,
        )
        self.self_attn_block = ResidualBlock(embed_dim, cfg.dropout, normalize_before)
        self.encoder_attn = RelPosCrossAttention(
            embed_dim, cfg.decoder.attention_heads, cfg.attention_dropout, cross_positions,
            kdim=cfg.encoder.embed_dim, impl=attention_impl,
        )
        self.encoder_attn_block = ResidualBlock(embed_dim, cfg.dropout, normalize_before)
        self.ffn = FeedForward(embed_dim, cfg.decoder.ffn_embed_dim, cfg.activation_fn, _activation_dropout(cfg))
        self.ffn_block = ResidualBlock(embed_dim, cfg.dropout, normalize_before)

    def forward(
        self,
        x: Tensor,  # Tq x B x C
        encoder_out: Tensor,  # Ts x B x C
        encoder_padding_mask: Optional[Tensor],  # B x Ts
        self_attn_padding_mask: Optional[Tensor] = None,  # B x Tq
        incremental_state: IncrementalState = None,
        need_head_weights: bool = False,  # return cross-attention weights, H x B x Tq x Ts
        token_positions: Optional[Positions] = None,  # of the target's tokens so far (self-attention's keys)
        memo: Optional[PassMemo] = None,  # of the pass, for self-attention
        cross_memo: Optional[PassMemo] = None,  # of the pass, for encoder-decoder attention
    ):
        x = self.self_attn_block(
            x, lambda h: self.self_attn(h, self_attn_padding_mask, incremental_state,
                                        key_positions=token_positions, memo=memo)[0]
        )
        cross_attn = None

        def attend_to_source(h):
            nonlocal cross_attn
            out, cross_attn = self.encoder_attn(
                query=h,
                key=encoder_out,
                value=encoder_out,
                key_padding_mask=encoder_padding_mask,
                incremental_state=incremental_state,
                static_kv=True,
                need_weights=need_head_weights,
                need_head_weights=need_head_weights,
                memo=cross_memo,
            )
            return out

        x = self.encoder_attn_block(x, attend_to_source)
        return self.ffn_block(x, self.ffn), cross_attn
