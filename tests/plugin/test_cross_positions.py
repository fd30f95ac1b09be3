"""Positions in encoder-decoder attention (``--cross-pos``, docs/positions.md): Marian's
ALiBi, ``-|m_h|·|s_j - t_i + b_h|`` between target position t_i and source position s_j,
with trained slopes and offsets, and ssmax's scale; the invariant suite covers
transformer_alibi_cross."""
import math

import pytest
import torch

from fairseq_relpos.modules.attention import RelPosCrossAttention

from conftest import build_tiny_model, tiny_dictionary
from test_model_invariants import decoder_input, encode, random_tokens

HEADS, DIM = 4, 32


@pytest.fixture(scope="module")
def dictionary():
    return tiny_dictionary()


@pytest.mark.parametrize("cross_pos", ["alibi", "alibi+ssmax"])
def test_cross_attention_equals_marians_equation_on_left_padded_sources(cross_pos, dictionary):
    """With ssmax too, the whole logit, content and bias, is multiplied by s_h·log n, n the real
    tokens of the row's source: the scale hook lives in the attention core that self- and
    encoder-decoder attention share."""
    model = build_tiny_model("transformer_alibi_cross", dictionary, cross_pos=cross_pos)
    attention = model.decoder.layers[0].encoder_attn
    assert isinstance(attention, RelPosCrossAttention)
    schemes = dict(attention.positions.schemes) if "+" in cross_pos else {"alibi": attention.positions}
    scheme = schemes["alibi"]
    torch.nn.init.normal_(scheme.slopes)
    torch.nn.init.normal_(scheme.offsets)
    if "ssmax" in schemes:
        torch.nn.init.normal_(schemes["ssmax"].s)
    torch.manual_seed(0)
    source_lengths, target_len, total = [7, 3], 5, 7
    padding = torch.tensor([[t < total - n for t in range(total)] for n in source_lengths])  # left padding
    source, target = torch.randn(total, 2, DIM), torch.randn(target_len, 2, DIM)
    with torch.no_grad():
        out, weights = attention(query=target, key=source, value=source, key_padding_mask=padding,
                                 need_head_weights=True)
        head_dim = DIM // HEADS
        split = lambda proj, x: proj(x).view(x.size(0), 2, HEADS, head_dim)  # noqa: E731
        q, k, v = split(attention.q_proj, target), split(attention.k_proj, source), split(attention.v_proj, source)
        z = torch.zeros(target_len, 2, HEADS, head_dim)
        for b, length in enumerate(source_lengths):
            first = total - length
            for h in range(HEADS):
                slope, offset = float(scheme.slopes[h]), float(scheme.offsets[h])
                scale = float(schemes["ssmax"].s[h]) * math.log(length) if "ssmax" in schemes else 1.0
                for i in range(target_len):
                    content = [float(q[i, b, h] @ k[j, b, h]) / math.sqrt(head_dim) for j in range(total)]
                    logits = torch.tensor([
                        float("-inf") if padding[b, j] else
                        scale * (content[j] - abs(slope) * abs(j - first - i + offset))
                        for j in range(total)])
                    alpha = torch.softmax(logits, dim=0)
                    torch.testing.assert_close(weights[h, b, i], alpha, atol=1e-5, rtol=1e-4)
                    z[i, b, h] = alpha @ v[:, b, h]
        expected = attention.out_proj(z.reshape(target_len, 2, DIM))
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-4)


def test_marians_slopes_and_offsets_start_at_its_values_and_train_per_layer(dictionary):
    model = build_tiny_model("transformer_alibi_cross", dictionary)
    names = {name for name, _ in model.named_parameters() if "encoder_attn.positions" in name}
    assert names == {f"decoder.layers.{i}.encoder_attn.positions.{p}" for i in range(2) for p in ("slopes", "offsets")}
    scheme = model.decoder.layers[1].encoder_attn.positions
    assert scheme.slopes.flatten().tolist() == pytest.approx([0.1] * HEADS)
    assert scheme.offsets.flatten().tolist() == pytest.approx([0.3] * HEADS)
    # self-attention keeps Press et al.'s fixed slopes
    assert not list(model.decoder.layers[0].self_attn.positions.parameters())


def test_fixed_cross_slopes_are_a_setting(dictionary):
    model = build_tiny_model("transformer_abs", dictionary, cross_pos="alibi:trainable=false,slope=0.25")
    scheme = model.decoder.layers[0].encoder_attn.positions
    assert not list(scheme.parameters()) and scheme.slopes.flatten().tolist() == [0.25] * HEADS


def test_without_cross_positions_encoder_decoder_attention_has_no_scheme(dictionary):
    """The module is the same (tests/plugin/test_attention_kernels.py: it is fairseq's
    MultiheadAttention on SDPA), with no position terms."""
    model = build_tiny_model("transformer_alibi", dictionary)
    assert all(isinstance(layer.encoder_attn, RelPosCrossAttention) and layer.encoder_attn.positions is None
               for layer in model.decoder.layers)


def test_cross_positions_change_the_translation_and_prefer_the_aligned_source(dictionary):
    """At the start of training (projections near zero) the bias alone steers attention: the
    target position t attends most to the source token at t."""
    model = build_tiny_model("transformer_abs", dictionary, cross_pos="alibi:slope=2,offset=0")
    for layer in model.decoder.layers:
        for proj in (layer.encoder_attn.q_proj, layer.encoder_attn.k_proj):
            torch.nn.init.zeros_(proj.weight)
            torch.nn.init.zeros_(proj.bias)
    src = random_tokens(dictionary, [8, 6], left_pad=True)
    prev = decoder_input(dictionary, random_tokens(dictionary, [6, 6], left_pad=False, seed=1))
    with torch.no_grad():
        _, extra = model(src, None, prev)
    attn = extra["attn"][0]  # B x Tq x Ts, averaged over heads
    assert attn[0].argmax(-1).tolist() == list(range(6))
    assert attn[1].argmax(-1).tolist() == [2, 3, 4, 5, 6, 7]  # the short source sits after 2 pads


@pytest.mark.parametrize("spec, refused", [("t5", "t5"), ("rope", "rope"), ("abs", "abs"), ("shaw", "shaw"),
                                           ("alibi+rand:max=9", "rand")])
def test_schemes_within_one_sequence_are_refused_across(spec, refused, dictionary):
    with pytest.raises(ValueError, match=rf"--cross-pos: {refused} does not apply to encoder-decoder "
                                         "attention.*expected 'none' or alibi, ssmax"):
        build_tiny_model("transformer_abs", dictionary, cross_pos=spec)


@pytest.mark.parametrize("cross_pos", ["alibi", "ssmax", "alibi+ssmax"])
def test_cached_cross_attention_follows_the_target_steps(cross_pos, dictionary):
    """Three tokens per step, then one: each step's queries sit where teacher forcing puts them
    (and count the keys it counts)."""
    model = build_tiny_model("transformer_alibi_cross", dictionary, cross_pos=cross_pos)
    for layer in model.decoder.layers:  # ssmax's s away from its start, so that a wrong count shows
        for name, parameter in layer.encoder_attn.positions.named_parameters():
            if name.rsplit(".", 1)[-1] == "s":
                torch.nn.init.uniform_(parameter, 0.5, 2.0)
    src = random_tokens(dictionary, [9, 4], left_pad=True)
    prev = decoder_input(dictionary, random_tokens(dictionary, [10, 10], left_pad=False, seed=1))
    with torch.no_grad():
        encoder_out, state = encode(model, src), {}
        full, _ = model.decoder(prev, encoder_out)
        steps = [model.decoder(prev[:, :end], encoder_out, incremental_state=state)[0] for end in (3, 6, 7, 8, 9, 10)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-4)
