"""Transformer-XL's relative attention (Dai et al. 2019, as written by Huang et al. 2020
eq. 10): ``e_ij = ((q_i + u)·k_j + (q_i + v)·W_R R_{i-j}) / √d_h`` with ``R`` sinusoidal.
``docs/positions.md`` has the details."""
from dataclasses import dataclass

import torch
from torch import nn

from . import register_scheme
from .base import AttentionScheme, sinusoids


@register_scheme("xl")
class TransformerXLPositions(AttentionScheme):
    """Per layer: ``W_R`` (d x d, no bias) projects the sinusoid of every distance to all
    heads, and ``u``, ``v`` (one d_h vector per head) bias the queries.  Huang et al. found
    that ``u`` and ``v`` destabilised training: ``biases=false`` drops them.

    As in Shaw's scheme, the position keys are computed once per distance and gathered,
    never per (query, key) pair; sinusoids have no table, so any length works."""

    @dataclass(frozen=True)
    class Settings:
        biases: bool = True

    def __init__(self, settings, context):
        super().__init__(settings, context)
        self.position_proj = nn.Linear(context.embed_dim, context.embed_dim, bias=False)  # W_R
        nn.init.xavier_uniform_(self.position_proj.weight)
        if settings.biases:
            self.content_bias = nn.Parameter(torch.empty(context.num_heads, 1, context.head_dim))  # u: H x 1 x dh
            self.position_bias = nn.Parameter(torch.empty(context.num_heads, 1, context.head_dim))  # v
            nn.init.normal_(self.content_bias, std=0.02)  # Dai et al.'s initialisation
            nn.init.normal_(self.position_bias, std=0.02)

    def logit_bias(self, q, k, span):
        heads, head_dim = self.context.num_heads, self.context.head_dim
        scaling = head_dim ** -0.5  # q arrives scaled; u, v and k do not
        lowest, highest = span.distance_range()
        query_minus_key = -torch.arange(lowest, highest + 1, device=q.device)  # R
        encoding = sinusoids(query_minus_key, self.context.embed_dim).to(q.dtype)  # R x d
        position_keys = self.position_proj(encoding).view(-1, heads, head_dim).transpose(0, 1)  # H x R x dh
        queries = q + self.position_bias * scaling if self.settings.biases else q
        per_distance = torch.matmul(queries, position_keys.transpose(-1, -2))  # B x H x Tq x R
        index = span.distances(lowest, highest).expand(q.size(0), heads, -1, -1)
        bias = per_distance.gather(-1, index)  # B x H x Tq x Tk
        if self.settings.biases:
            content = torch.matmul(k, self.content_bias.transpose(-1, -2)) * scaling  # B x H x Tk x 1
            bias = bias + content.transpose(-1, -2)  # u·k_j: the same for every query
        return bias
