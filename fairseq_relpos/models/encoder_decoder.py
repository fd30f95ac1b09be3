"""Transformer encoder and decoder whose position information comes from a PositionSpec;
the decoder's encoder-decoder attention from another (``--cross-pos``)."""
import math
from typing import Any, Dict, List, Optional

import torch
from fairseq.models import FairseqEncoder, FairseqIncrementalDecoder
from fairseq.models.transformer import TransformerEncoderBase
from fairseq.modules import FairseqDropout, LayerDropModuleList, LayerNorm
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from torch import Tensor, nn

from ..modules import flex
from ..modules.layers import RelPosDecoderLayer, RelPosEncoderLayer
from ..positions import PositionSpec
from ..positions.base import IncrementalState, PassMemo, Positions, StackContext

#: what max_positions() reports for a stack that can encode any length
UNBOUNDED_POSITIONS = 1_000_000


class _EmbeddingFrontEnd(nn.Module):
    """Token embedding, scale, input position scheme, optional layer norm, dropout."""

    def __init__(self, cfg, embed_tokens, context: StackContext, spec: PositionSpec):
        super().__init__()
        self.embed_tokens = embed_tokens
        self.padding_idx = embed_tokens.padding_idx
        self.embed_scale = 1.0 if cfg.no_scale_embedding else math.sqrt(context.embed_dim)
        self.input_positions = spec.build_input(context)
        self.layernorm_embedding = LayerNorm(context.embed_dim) if cfg.layernorm_embedding else None
        self.dropout = FairseqDropout(cfg.dropout, module_name="EmbeddingFrontEnd")

    def forward(self, tokens, padding_mask, positions, incremental_state=None):  # positions: B|1 x T
        embedded = self.embed_scale * self.embed_tokens(tokens)  # B x T x C
        x = embedded
        if self.input_positions is not None:
            x = self.input_positions(x, padding_mask, positions, incremental_state)
        if self.layernorm_embedding is not None:
            x = self.layernorm_embedding(x)
        x = self.dropout(x)
        return x.masked_fill(padding_mask.unsqueeze(-1), 0), embedded


def _layer_stack(cfg, layerdrop, layers: List[nn.Module]) -> nn.ModuleList:
    if cfg.checkpoint_activations:
        layers = [checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations) for layer in layers]
    stack = LayerDropModuleList(p=layerdrop) if layerdrop > 0 else nn.ModuleList()
    stack.extend(layers)
    return stack


class _PositionedStack:
    """What the encoder and the decoder share: the positions of a pass (drawn while
    training, by a ``rand`` scheme), the embedding front end with its input scheme, a stack
    of layers each with its attention scheme, and the final layer norm.  Each pass makes the
    memo through which its layers share position terms (:class:`PassMemo`) and hands it
    down to them."""

    def _build_stack(self, cfg, side_cfg, spec: PositionSpec, max_positions, embed_tokens, causal, make_layer,
                     final_norm=True):
        """``make_layer(index, attention scheme)`` builds a layer."""
        context = StackContext(
            embed_dim=side_cfg.embed_dim,
            num_heads=side_cfg.attention_heads,
            num_layers=side_cfg.layers,
            causal=causal,
            max_positions=max_positions,
        )
        self.training_positions = spec.build_training_positions(context)
        self.front_end = _EmbeddingFrontEnd(cfg, embed_tokens, context, spec)
        attention_schemes = spec.build_attention_layers(context)
        self.layers = _layer_stack(
            cfg, side_cfg.layerdrop, [make_layer(index, positions) for index, positions in enumerate(attention_schemes)]
        )
        self.layer_norm = LayerNorm(context.embed_dim) if side_cfg.normalize_before and final_norm else None
        schemes = [self.front_end.input_positions] + attention_schemes
        limits = [(scheme.max_positions(), scheme.name) for scheme in schemes if scheme is not None]
        limits = [(limit, name) for limit, name in limits if limit is not None]
        self._max_positions = min([limit for limit, _ in limits], default=UNBOUNDED_POSITIONS)
        drawn = self.training_positions
        if drawn is not None and drawn.settings.max is not None and drawn.settings.max < max_positions:
            # a longer training sentence would have no positions to draw, and fail mid-training
            option = f"--max-{'target' if causal else 'source'}-positions"
            raise ValueError(f"--{context.side}-pos: {drawn.extra_repr()} draws the positions of a training sentence "
                             f"from 0…{drawn.settings.max - 1}, but {option} {max_positions} lets in sentences of up "
                             f"to {max_positions} tokens; set max to at least {max_positions}, or {option} to at "
                             f"most {drawn.settings.max}")
        if drawn is not None and drawn.reach() is not None and drawn.reach() > self._max_positions:
            tabled = sorted({name for limit, name in limits if limit < drawn.reach()})
            raise ValueError(f"--{context.side}-pos: {drawn.extra_repr()} draws positions up to {drawn.reach() - 1}, "
                             f"beyond the {self._max_positions} positions of the table of {', '.join(tabled)} "
                             f"(--max-{'target' if causal else 'source'}-positions)")

    def max_positions(self):
        return self._max_positions

    def _check_attention_impl(self, tokens: Tensor):
        """Refuses, before any work, a pass FlexAttention cannot run (gradients on the CPU)."""
        if self.attention_impl == "flex":
            flex.refuse_gradients_on_cpu(tokens.device)

    def _positions(self, padding_mask: Tensor, start: int, incremental_state: IncrementalState) -> Positions:
        """Where the tokens ``0 … start+T-1`` of this call sit (``padding_mask``: B x T, the
        new ones): drawn in a training pass where the spec has training positions, counted
        otherwise (and always in cached decoding, whose earlier steps sat at 0, 1, …)."""
        if self.training_positions is not None and self.training and incremental_state is None:
            return self.training_positions.positions(padding_mask)
        return Positions.counting(start + padding_mask.size(1), padding_mask.device,
                                  padding_mask if start == 0 else None)


class RelPosEncoder(_PositionedStack, FairseqEncoder):
    def __init__(self, cfg, spec: PositionSpec, dictionary, embed_tokens, attention_impl: str = "reference"):
        super().__init__(dictionary)
        self.attention_impl = attention_impl
        self._build_stack(cfg, cfg.encoder, spec, cfg.max_source_positions, embed_tokens, causal=False,
                          make_layer=lambda index, positions: RelPosEncoderLayer(cfg, positions, attention_impl))

    def forward(
        self,
        src_tokens: Tensor,  # B x T
        src_lengths: Optional[Tensor] = None,
        return_all_hiddens: bool = False,
        token_embeddings: Optional[Tensor] = None,
    ) -> Dict[str, List[Tensor]]:
        self._check_attention_impl(src_tokens)
        padding_mask = src_tokens.eq(self.front_end.padding_idx)  # B x T
        positions = self._positions(padding_mask, 0, None)
        x, embedded = self.front_end(src_tokens, padding_mask, positions.rows())
        x = x.transpose(0, 1)  # T x B x C
        layer_padding_mask = padding_mask if padding_mask.any() else None
        states = [x] if return_all_hiddens else []
        memo = PassMemo()
        for layer in self.layers:
            x = layer(x, layer_padding_mask, positions, memo)
            if return_all_hiddens:
                states.append(x)
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        lengths = (~padding_mask).sum(dim=1, dtype=torch.int32).reshape(-1, 1)
        return {
            "encoder_out": [x],  # T x B x C
            "encoder_padding_mask": [padding_mask],  # B x T
            "encoder_embedding": [embedded],  # B x T x C
            "encoder_states": states,  # List[T x B x C]
            "src_tokens": [],
            "src_lengths": [lengths],  # B x 1
        }

    # the output dict is fairseq's own, so is its reordering for beam search
    reorder_encoder_out = TransformerEncoderBase.reorder_encoder_out


class RelPosDecoder(_PositionedStack, FairseqIncrementalDecoder):
    """Decoder that may take several new tokens per incremental step.

    fairseq's generator feeds the whole prefix at every step; the decoder remembers how
    many tokens it has already processed and runs only the new ones.
    """

    def __init__(self, cfg, spec: PositionSpec, dictionary, embed_tokens, cross_spec: PositionSpec = PositionSpec(()),
                 attention_impl: str = "reference"):
        super().__init__(dictionary)
        self.attention_impl = attention_impl
        cross_context = StackContext(
            embed_dim=cfg.decoder.embed_dim,
            num_heads=cfg.decoder.attention_heads,
            num_layers=cfg.decoder.layers,
            causal=False,
            max_positions=cfg.max_source_positions,
            cross=True,
        )
        cross_schemes = cross_spec.build_attention_layers(cross_context)

        def make_layer(index, positions):
            return RelPosDecoderLayer(cfg, positions, cross_schemes[index], attention_impl)

        self._build_stack(cfg, cfg.decoder, spec, cfg.max_target_positions, embed_tokens, causal=True,
                          make_layer=make_layer, final_norm=not cfg.no_decoder_final_norm)
        embed_dim = cfg.decoder.embed_dim
        self.output_projection = nn.Linear(embed_dim, len(dictionary), bias=False)
        if cfg.share_decoder_input_output_embed:
            self.output_projection.weight = embed_tokens.weight
        else:
            nn.init.normal_(self.output_projection.weight, mean=0, std=embed_dim ** -0.5)

    def forward(
        self,
        prev_output_tokens: Tensor,  # B x T
        encoder_out: Optional[Dict[str, List[Tensor]]] = None,
        incremental_state: IncrementalState = None,
        features_only: bool = False,
        full_context_alignment: bool = False,
        alignment_layer: Optional[int] = None,
        alignment_heads: Optional[int] = None,
        src_lengths: Optional[Any] = None,
        return_all_hiddens: bool = False,
    ):
        x, extra = self.extract_features(
            prev_output_tokens, encoder_out, incremental_state,
            alignment_layer=alignment_layer, alignment_heads=alignment_heads,
        )
        if not features_only:
            x = self.output_layer(x)
        return x, extra

    def extract_features(
        self,
        prev_output_tokens: Tensor,
        encoder_out: Optional[Dict[str, List[Tensor]]],
        incremental_state: IncrementalState = None,
        alignment_layer: Optional[int] = None,
        alignment_heads: Optional[int] = None,
        **unused,
    ):
        self._check_attention_impl(prev_output_tokens)
        start = self._steps_done(incremental_state)
        tokens = prev_output_tokens[:, start:]  # B x Tnew
        if incremental_state is not None:
            self._set_steps_done(incremental_state, start + tokens.size(1))
        padding_mask = tokens.eq(self.front_end.padding_idx)
        positions = self._positions(padding_mask, start, incremental_state)  # of the tokens 0 … start+Tnew-1
        x, _ = self.front_end(tokens, padding_mask, positions.rows()[:, start:], incremental_state)
        x = x.transpose(0, 1)  # Tnew x B x C

        source = encoder_out["encoder_out"][0] if encoder_out else None  # Ts x B x C
        source_padding = encoder_out["encoder_padding_mask"] if encoder_out else []
        source_padding_mask = source_padding[0] if source_padding else None
        if source_padding_mask is not None and not source_padding_mask.any():
            source_padding_mask = None  # no mask then: FlashAttention takes encoder-decoder attention
        self_attn_padding_mask = padding_mask if padding_mask.any() else None
        if alignment_layer is None:
            alignment_layer = len(self.layers) - 1

        attn, inner_states = None, [x]
        # what the self-attention of the layers shares, and what their encoder-decoder attention does
        memo, cross_memo = PassMemo(), PassMemo()
        for index, layer in enumerate(self.layers):
            x, layer_attn = layer(
                x, source, source_padding_mask, self_attn_padding_mask, incremental_state,
                need_head_weights=index == alignment_layer, token_positions=positions, memo=memo,
                cross_memo=cross_memo,
            )
            inner_states.append(x)
            if index == alignment_layer and layer_attn is not None:
                attn = layer_attn.float().to(x)
        if attn is not None:
            if alignment_heads is not None:
                attn = attn[:alignment_heads]
            attn = attn.mean(dim=0)  # B x Tnew x Ts
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        return x.transpose(0, 1), {"attn": [attn], "inner_states": inner_states}  # B x Tnew x C

    def output_layer(self, features):
        return self.output_projection(features)

    def _steps_done(self, incremental_state: IncrementalState) -> int:
        state = self.get_incremental_state(incremental_state, "decoding")
        return 0 if state is None else int(state["steps"])

    def _set_steps_done(self, incremental_state, steps: int):
        self.set_incremental_state(incremental_state, "decoding", {"steps": torch.tensor(steps)})
