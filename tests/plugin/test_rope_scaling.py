"""RoPE scaling at inference (docs/positions.md, rope): position interpolation (Chen et al.
2023), NTK-aware base scaling and YaRN (Peng et al. 2023), against their defining properties
and, where it is importable, against Hugging Face transformers' modeling_rope_utils."""
import math

import pytest
import torch

from fairseq_relpos.positions import PositionSpec
from fairseq_relpos.positions.rope import rotation_frequencies

from conftest import build_tiny_model, tiny_dictionary
from test_model_invariants import decoder_input, random_tokens


def frequencies(spec, head_dim):
    settings = dict(PositionSpec.parse(spec).schemes)["rope"]
    inv_freq, attention_factor = rotation_frequencies(settings, head_dim)
    return inv_freq, attention_factor


def test_position_interpolation_divides_every_frequency():
    plain, _ = frequencies("rope", 64)
    scaled, attention_factor = frequencies("rope:scaling=pi,factor=4", 64)
    torch.testing.assert_close(scaled * 4, plain)
    assert attention_factor == 1.0


def test_ntk_keeps_the_fastest_frequency_and_interpolates_the_slowest():
    """base·F^(d/(d-2)): θ_0 = 1 stays, θ_{d/2-1} = base^(-(d-2)/d) is divided by F."""
    plain, _ = frequencies("rope", 64)
    scaled, attention_factor = frequencies("rope:scaling=ntk,factor=8", 64)
    assert float(scaled[0]) == 1.0 and attention_factor == 1.0
    torch.testing.assert_close(scaled[-1] * 8, plain[-1], rtol=1e-12, atol=0)
    assert bool((scaled[1:] < plain[1:]).all())


def test_yarn_interpolates_slow_dimensions_keeps_fast_ones_and_sharpens():
    """Dimensions that turn more than 32 times over the trained length keep their frequency,
    those that turn less than once are divided by F; logits grow by (0.1·ln F + 1)²."""
    original, factor = 128, 4
    plain, _ = frequencies("rope", 64)
    scaled, attention_factor = frequencies(f"rope:scaling=yarn,factor={factor},original={original}", 64)
    turns = original * plain / (2 * math.pi)
    torch.testing.assert_close(scaled[turns > 32], plain[turns > 32])
    torch.testing.assert_close(scaled[turns < 1], plain[turns < 1] / factor)
    assert bool((scaled <= plain).all()) and attention_factor == pytest.approx(0.1 * math.log(4) + 1)


def test_a_scaled_model_loads_the_state_of_an_unscaled_one_and_decodes_consistently():
    dictionary = tiny_dictionary()
    plain = build_tiny_model("transformer_rope", dictionary)
    scaled = build_tiny_model("transformer_rope", dictionary, encoder_pos="rope:scaling=yarn,factor=4,original=16",
                              decoder_pos="rope:scaling=yarn,factor=4,original=16")
    scaled.load_state_dict(plain.state_dict(), strict=True)
    src = random_tokens(dictionary, [30, 12], left_pad=True)
    prev = decoder_input(dictionary, random_tokens(dictionary, [40, 40], left_pad=False, seed=1))
    with torch.no_grad():
        full, _ = scaled(src, None, prev)
        encoder_out, state = scaled.encoder(src), {}
        steps = [scaled.decoder(prev[:, :end], encoder_out, incremental_state=state)[0]
                 for end in range(1, prev.size(1) + 1)]
        unscaled, _ = plain(src, None, prev)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-4)
    assert not torch.allclose(full, unscaled, atol=1e-3)


# --- transformers as a peer ---------------------------------------------------------------
CASES = [  # (spec, head_dim, transformers' rope_type, its rope parameters, max_position_embeddings, seq_len)
    ("rope:scaling=pi,factor=4", 64, "linear", {"factor": 4.0}, 1024, None),
    ("rope:base=500,scaling=pi,factor=2.5", 32, "linear", {"factor": 2.5}, 1024, None),
    # transformers' NTK is dynamic: base·(F·s/L - (F-1))^(d/(d-2)) at length s, which is the
    # static base·F^(d/(d-2)) at s = L·(2F-1)/F
    ("rope:scaling=ntk,factor=4", 64, "dynamic", {"factor": 4.0}, 128, 128 * 7 / 4),
    ("rope:base=500,scaling=ntk,factor=8", 32, "dynamic", {"factor": 8.0}, 64, 64 * 15 / 8),
    ("rope:scaling=yarn,factor=4,original=128", 64, "yarn", {"factor": 4.0, "original_max_position_embeddings": 128},
     512, None),
    ("rope:scaling=yarn,factor=16,original=2048", 64, "yarn",
     {"factor": 16.0, "original_max_position_embeddings": 2048}, 32768, None),
    ("rope:base=500,scaling=yarn,factor=2,original=64", 32, "yarn",
     {"factor": 2.0, "original_max_position_embeddings": 64}, 128, None),
]


@pytest.mark.parametrize("spec, head_dim, rope_type, parameters, max_positions, seq_len", CASES)
def test_scaled_frequencies_equal_transformers(spec, head_dim, rope_type, parameters, max_positions, seq_len):
    rope_utils = pytest.importorskip("transformers.modeling_rope_utils")
    from transformers import PretrainedConfig

    config = PretrainedConfig(hidden_size=8 * head_dim, num_attention_heads=8, max_position_embeddings=max_positions)
    base = dict(PositionSpec.parse(spec).schemes)["rope"].base
    config.rope_parameters = {"rope_type": rope_type, "rope_theta": base, **parameters}
    expected, expected_factor = rope_utils.ROPE_INIT_FUNCTIONS[rope_type](config, None, **(
        {"seq_len": seq_len} if seq_len else {}))
    inv_freq, attention_factor = frequencies(spec, head_dim)
    print(f"{spec}: largest relative difference {float(((inv_freq - expected.double()) / expected.double()).abs().max()):.2e},"
          f" attention factor {attention_factor} against {expected_factor}")
    torch.testing.assert_close(inv_freq.float(), expected, rtol=1e-6, atol=0)
    assert attention_factor == pytest.approx(expected_factor, rel=1e-12)
