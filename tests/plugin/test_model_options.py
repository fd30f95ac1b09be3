"""Every option of fairseq's transformer is honoured or refused by relpos_transformer: the
test walks fairseq's own parser, so an option that appears in fairseq is classified here."""
import argparse

import pytest
import torch
from fairseq.models.transformer import TransformerModel

from fairseq_relpos.models.options import UNSUPPORTED_OPTIONS

from conftest import build_tiny_model, tiny_dictionary

PROBE_ARCH = "relpos_transformer"
PROBE_SPEC = dict(encoder_pos="abs_learned+shaw", decoder_pos="abs_learned+shaw")

#: honoured options, each with settings that must change the model's structure or outputs
HONOURED = {
    "activation_fn": dict(activation_fn="gelu"),
    "dropout": dict(dropout=0.3),
    "attention_dropout": dict(attention_dropout=0.3),
    "activation_dropout": dict(activation_dropout=0.3),
    "relu_dropout": dict(relu_dropout=0.3),
    "encoder_embed_dim": dict(encoder_embed_dim=16),
    "encoder_ffn_embed_dim": dict(encoder_ffn_embed_dim=16),
    "encoder_layers": dict(encoder_layers=1),
    "encoder_attention_heads": dict(encoder_attention_heads=2),
    "encoder_normalize_before": dict(encoder_normalize_before=True),
    "encoder_layerdrop": dict(encoder_layerdrop=0.5),
    "max_source_positions": dict(max_source_positions=64),
    "decoder_embed_dim": dict(decoder_embed_dim=16, decoder_output_dim=16),
    "decoder_ffn_embed_dim": dict(decoder_ffn_embed_dim=16),
    "decoder_layers": dict(decoder_layers=1),
    "decoder_attention_heads": dict(decoder_attention_heads=2),
    "decoder_normalize_before": dict(decoder_normalize_before=True),
    "decoder_layerdrop": dict(decoder_layerdrop=0.5),
    "max_target_positions": dict(max_target_positions=64),
    "share_decoder_input_output_embed": dict(share_decoder_input_output_embed=True),
    "share_all_embeddings": dict(share_all_embeddings=True),
    "layernorm_embedding": dict(layernorm_embedding=True),
    "no_scale_embedding": dict(no_scale_embedding=True),
    "checkpoint_activations": dict(checkpoint_activations=True),
    "offload_activations": dict(checkpoint_activations=True, offload_activations=True),
    "no_decoder_final_norm": dict(decoder_normalize_before=True, no_decoder_final_norm=True),
}
#: options that must equal another one, refused otherwise
CHECKED = {"decoder_output_dim": dict(decoder_output_dim=16)}
POSITION_OPTIONS = {"encoder_pos", "decoder_pos", "cross_pos", "max_relative_position"}


def transformer_options():
    parser = argparse.ArgumentParser()
    TransformerModel.add_args(parser)
    return {action.dest: action for action in parser._actions if action.dest != "help"}


def test_every_transformer_option_is_honoured_or_refused():
    unclassified = set(transformer_options()) - set(HONOURED) - set(UNSUPPORTED_OPTIONS) - set(CHECKED)
    assert not unclassified


def fingerprint(options):
    """Structure, size and train-mode outputs (fixed seeds) of a model built with options."""
    dictionary = tiny_dictionary()
    model = build_tiny_model(PROBE_ARCH, dictionary, **{**PROBE_SPEC, **options})
    src = torch.tensor([[5, 6, 7, 8, 2]])
    prev = torch.tensor([[2, 9, 10, 11, 12]])
    torch.manual_seed(1)
    logits, _ = model.train()(src, None, prev)
    parameters = sum(p.numel() for p in model.parameters())
    # activation checkpointing wraps each layer's forward: (wrapped?, offload to CPU?)
    checkpointing = [getattr(layer.forward, "args", ())[1:] for layer in model.encoder.layers]
    return (repr(model), checkpointing), parameters, logits.detach()


@pytest.fixture(scope="module")
def default_fingerprint():
    return fingerprint({})


@pytest.mark.parametrize("option", sorted(HONOURED))
def test_honoured_option_changes_the_model(option, default_fingerprint):
    structure, parameters, logits = fingerprint(HONOURED[option])
    assert (structure, parameters) != default_fingerprint[:2] or not torch.equal(logits, default_fingerprint[2])


@pytest.mark.parametrize("option", sorted(UNSUPPORTED_OPTIONS) + sorted(CHECKED))
def test_unsupported_option_is_refused_by_name(option):
    action = transformer_options()[option]
    value = CHECKED.get(option, {}).get(option)
    if value is None:
        value = True if action.nargs == 0 else (action.type or str)("1")
    flag = "--" + option.replace("_", "-")
    with pytest.raises(ValueError, match=flag):
        build_tiny_model(PROBE_ARCH, **{**PROBE_SPEC, option: value})


def test_what_model_overrides_can_get_wrong_is_refused_by_name():
    """--model-overrides sets any key fairseq is given: a spec that is not text, an option
    one letter off ours (fairseq would ignore it), and a scheme the checkpoint has no
    parameters for (torch would say "Unexpected key(s)") are each refused saying what."""
    with pytest.raises(ValueError, match=r"--encoder-pos: expected a position spec \(text, such as 'shaw' or "
                                         r"'rope\+alibi'\), got 5 \(int\)"):
        build_tiny_model("relpos_transformer", encoder_pos=5)
    with pytest.raises(ValueError, match=r"unknown model option 'encoder_poss' \(from --model-overrides\?\); did "
                                         r"you mean 'encoder_pos'\?"):
        build_tiny_model("relpos_transformer", encoder_poss="rope")
    trained = build_tiny_model("transformer_rel")
    overridden = build_tiny_model("relpos_transformer", encoder_pos="rope", decoder_pos="rope")
    with pytest.raises(ValueError, match=r"the checkpoint does not fit the model built for it: it has 8 "
                                         r"parameter\(s\) this model has no place for \(decoder\.layers\.0\.self_attn"
                                         r"\.positions\.key_table.*a checkpoint keeps its schemes"):
        overridden.load_state_dict(trained.state_dict())
