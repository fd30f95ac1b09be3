"""LSTM positions (004 §3.3): the embeddings pass through a one-layer LSTM before the first
layer, bidirectional in the encoder, left-to-right in the decoder; no other position term.

Padding is never read: each row's tokens are packed, whether the batch pads on the left
(fairseq's sources) or on the right.  Step-by-step decoding carries the LSTM state.
"""
import torch
from fairseq.incremental_decoding_utils import with_incremental_state
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from . import register_scheme
from .base import InputScheme


@register_scheme("lstm")
@with_incremental_state
class LSTMPositions(InputScheme):
    reads_positions = False

    def __init__(self, settings, context):
        super().__init__(settings, context)
        bidirectional = not context.causal
        hidden = context.embed_dim // 2 if bidirectional else context.embed_dim
        if hidden * (2 if bidirectional else 1) != context.embed_dim:
            raise ValueError(f"lstm positions need an even embedding dim, got {context.embed_dim}")
        self.lstm = nn.LSTM(
            context.embed_dim, hidden, num_layers=1, batch_first=True, bidirectional=bidirectional
        )

    def forward(self, x, padding_mask, positions=None, incremental_state=None):
        state = self._get_state(incremental_state)
        if not padding_mask.any():
            output, new_state = self.lstm(x, state)
        else:
            output, new_state = self._run_packed(x, padding_mask, state)
        if incremental_state is not None:
            self.set_incremental_state(incremental_state, "lstm", {"h": new_state[0], "c": new_state[1]})
        return output

    def _run_packed(self, x, padding_mask, state):
        # Move each row's tokens to the front (stable, so their order is kept), pack, run,
        # then put the outputs back where the tokens came from.
        seq_len = x.size(1)
        order = torch.sort(padding_mask.long(), dim=1, stable=True).indices  # B x T
        lengths = (~padding_mask).sum(dim=1)
        gather = order.unsqueeze(-1).expand_as(x)
        packed = pack_padded_sequence(
            x.gather(1, gather), lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        packed_output, new_state = self.lstm(packed, state)
        output, _ = pad_packed_sequence(packed_output, batch_first=True, total_length=seq_len)
        restored = torch.empty_like(output).scatter_(1, order.unsqueeze(-1).expand_as(output), output)
        return restored.masked_fill(padding_mask.unsqueeze(-1), 0), new_state

    def _get_state(self, incremental_state):
        cached = self.get_incremental_state(incremental_state, "lstm")
        return None if cached is None else (cached["h"], cached["c"])

    def reorder_incremental_state(self, incremental_state, new_order):
        cached = self.get_incremental_state(incremental_state, "lstm")
        if cached is not None:
            reordered = {name: state.index_select(1, new_order) for name, state in cached.items()}
            self.set_incremental_state(incremental_state, "lstm", reordered)
