"""Invariant 1 (SPEC §2): every scheme equals a loop-by-the-equation reference, with padding.

Each registered scheme must have a reference here; a new scheme without one fails
`test_every_scheme_has_a_reference`.
"""
import math

import pytest
import torch

from fairseq_relpos.modules.attention import RelPosSelfAttention
from fairseq_relpos.positions import ATTENTION_SCHEMES, INPUT_SCHEMES, PositionSpec, scheme_names
from fairseq_relpos.positions.base import PositionContext

EMBED_DIM, HEADS, K = 16, 2, 3
ATOL = 1e-5


def context(causal, num_layers=1, max_positions=64):
    return PositionContext(
        embed_dim=EMBED_DIM, num_heads=HEADS, num_layers=num_layers, causal=causal,
        max_relative_position=K, max_positions=max_positions,
    )


def left_padding_mask(lengths, total):
    return torch.tensor([[position < total - length for position in range(total)] for length in lengths])


def right_padding_mask(lengths, total):
    return torch.tensor([[position >= length for position in range(total)] for length in lengths])


# --- references, straight from the equations (SPEC §1, 004 §3) -------------------------
def reference_sinusoid(position, dim, spectrum_dim=None):
    spectrum_dim = spectrum_dim or dim
    return torch.tensor([
        math.sin(position / 10000 ** (2 * (i // 2) / spectrum_dim)) if i % 2 == 0
        else math.cos(position / 10000 ** (2 * (i // 2) / spectrum_dim))
        for i in range(dim)
    ])


def add_per_position(x, padding_mask, vector_at):
    """x plus vector_at(p) at each token, p counting the row's tokens from 0."""
    out = x.clone()
    for b in range(x.size(0)):
        position = 0
        for t in range(x.size(1)):
            if not padding_mask[b, t]:
                out[b, t] += vector_at(position)
                position += 1
    return out


def reference_input_abs(scheme, x, padding_mask):
    return add_per_position(x, padding_mask, lambda p: reference_sinusoid(p, x.size(2)))


def reference_input_abs_learned(scheme, x, padding_mask):
    return add_per_position(x, padding_mask, lambda p: scheme.table.weight[p])


def reference_input_lstm(scheme, x, padding_mask):
    out = torch.zeros_like(x)
    for b in range(x.size(0)):
        tokens = (~padding_mask[b]).nonzero().squeeze(1)
        out[b, tokens] = scheme.lstm(x[b, tokens].unsqueeze(0))[0].squeeze(0)  # one unpadded sentence
    return out


def shaw_tables(scheme):
    """w^K and w^V as functions of the signed distance, or None where the scheme has none."""
    if scheme.scheme_name == "shaw_sin":
        sinusoid = lambda r: reference_sinusoid(r, EMBED_DIM // HEADS, EMBED_DIM)  # noqa: E731
        return sinusoid, sinusoid
    row = lambda table: (lambda r: table[r + K]) if table is not None else None  # noqa: E731
    return row(scheme.key_table), row(scheme.value_table)


def reference_shaw_attention(attention, x, key_padding_mask):
    """e_ij = q_i·(k_j + a^K_ij)/√d_h, z_i = Σ_j α_ij (v_j + a^V_ij), a^X_ij = w^X[clip(j-i, k)]."""
    length, bsz, _ = x.shape
    head_dim = EMBED_DIM // HEADS
    heads = lambda proj: proj(x).view(length, bsz, HEADS, head_dim)  # noqa: E731
    q, k, v = heads(attention.q_proj), heads(attention.k_proj), heads(attention.v_proj)
    key_table, value_table = shaw_tables(attention.positions) if attention.positions else (None, None)
    clip = lambda r: max(-K, min(K, r))  # noqa: E731
    z = torch.zeros(length, bsz, HEADS, head_dim)
    for b in range(bsz):
        for h in range(HEADS):
            for i in range(length):
                logits = []
                for j in range(length):
                    if key_padding_mask[b, j] or (attention.causal and j > i):
                        logits.append(float("-inf"))
                        continue
                    key = k[j, b, h] + (key_table(clip(j - i)) if key_table else 0)
                    logits.append(float(q[i, b, h] @ key) / math.sqrt(head_dim))
                alpha = torch.softmax(torch.tensor(logits), dim=0)
                for j in range(length):
                    if alpha[j] > 0:
                        value = v[j, b, h] + (value_table(clip(j - i)) if value_table else 0)
                        z[i, b, h] += alpha[j] * value
    return attention.out_proj(z.reshape(length, bsz, EMBED_DIM))


INPUT_REFERENCES = {
    "abs": reference_input_abs,
    "abs_learned": reference_input_abs_learned,
    "lstm": reference_input_lstm,
}
ATTENTION_REFERENCES = {name: reference_shaw_attention for name in ("shaw", "shaw_k", "shaw_v", "shaw_sin")}


def test_every_scheme_has_a_reference():
    assert set(INPUT_SCHEMES) == set(INPUT_REFERENCES)
    assert set(ATTENTION_SCHEMES) == set(ATTENTION_REFERENCES)


@pytest.mark.parametrize("causal", [False, True], ids=["encoder", "decoder"])
@pytest.mark.parametrize("name", sorted(INPUT_SCHEMES))
def test_input_scheme_equals_reference(name, causal):
    torch.manual_seed(0)
    scheme = INPUT_SCHEMES[name](context(causal)).eval()
    lengths, total = [7, 4, 1], 7
    padding_mask = (right_padding_mask if causal else left_padding_mask)(lengths, total)
    x = torch.randn(len(lengths), total, EMBED_DIM)
    with torch.no_grad():
        expected = INPUT_REFERENCES[name](scheme, x, padding_mask)
        actual = scheme(x, padding_mask)
    tokens = ~padding_mask
    torch.testing.assert_close(actual[tokens], expected[tokens], atol=ATOL, rtol=1e-4)


@pytest.mark.parametrize("causal", [False, True], ids=["encoder", "decoder"])
@pytest.mark.parametrize("name", sorted(ATTENTION_SCHEMES) + [None])
def test_self_attention_equals_reference(name, causal):
    torch.manual_seed(0)
    positions = ATTENTION_SCHEMES[name](context(causal)) if name else None
    if positions is not None:
        for table in positions.parameters():
            torch.nn.init.normal_(table)  # make the position terms count
    attention = RelPosSelfAttention(EMBED_DIM, HEADS, positions=positions, causal=causal).eval()
    lengths, total = [9, 5, 2], 9  # longer than k on both sides, so clipping happens
    padding_mask = (right_padding_mask if causal else left_padding_mask)(lengths, total)
    x = torch.randn(total, len(lengths), EMBED_DIM)
    with torch.no_grad():
        expected = reference_shaw_attention(attention, x, padding_mask)
        actual, _ = attention(x, padding_mask)
        with_weights, weights = attention(x, padding_mask, need_weights=True)
    tokens = ~padding_mask.t()  # T x B
    torch.testing.assert_close(actual[tokens], expected[tokens], atol=ATOL, rtol=1e-4)
    torch.testing.assert_close(with_weights, actual, atol=ATOL, rtol=1e-4)  # fused = explicit path
    assert torch.allclose(weights.sum(-1), torch.ones(()))


def test_tables_shared_across_heads_and_sized_by_distance():
    k, head_dim = K, EMBED_DIM // HEADS
    expected = {
        # (encoder rows, decoder rows) x tables; causal attention never sees positive distances
        "shaw": 2 * head_dim,
        "shaw_k": head_dim,
        "shaw_v": head_dim,
        "shaw_sin": 0,
    }
    for name, per_row in expected.items():
        for causal, rows in ((False, 2 * k + 1), (True, k + 1)):
            scheme = ATTENTION_SCHEMES[name](context(causal))
            assert sum(p.numel() for p in scheme.parameters()) == rows * per_row, (name, causal)


def test_schemes_are_separate_per_layer():
    layers = PositionSpec.parse("shaw").build_attention_layers(context(False, num_layers=3))
    assert len({id(layer.key_table) for layer in layers}) == 3


@pytest.mark.parametrize(
    "spec, expected",
    [("none", (None, None)), ("abs", ("abs", None)), ("shaw", (None, "shaw")),
     ("abs+shaw", ("abs", "shaw")), ("shaw_k + lstm", ("lstm", "shaw_k"))],
)
def test_position_spec_parse(spec, expected):
    parsed = PositionSpec.parse(spec)
    assert (parsed.input, parsed.attention) == expected


@pytest.mark.parametrize("spec", ["abs+lstm", "shaw+shaw_k", "rope", "", "none+abs"])
def test_position_spec_rejects_with_the_option_name(spec):
    with pytest.raises(ValueError, match="--encoder-pos"):
        PositionSpec.parse(spec, "--encoder-pos")


def test_every_scheme_name_is_listed():
    assert set(scheme_names()) == {"none"} | set(INPUT_SCHEMES) | set(ATTENTION_SCHEMES)
