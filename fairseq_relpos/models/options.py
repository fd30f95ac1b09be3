"""The checks of the model's options: fairseq's transformer options it does not implement,
misspelled options of its own, and the position specs of the command line."""
import argparse
import dataclasses
import difflib
import logging

from fairseq.models.transformer.transformer_legacy import base_architecture

from ..positions import SCHEMES, PositionSpec

# the model's logger: its messages keep the name they have always been logged under
logger = logging.getLogger("fairseq_relpos.models.relpos_transformer")

#: stock transformer options this model does not implement, with what to use instead; a
#: value other than fairseq's default is refused (every other option of fairseq's
#: transformer is honoured, which tests/plugin/test_model_options.py checks option by option)
UNSUPPORTED_OPTIONS = {
    "encoder_learned_pos": "--encoder-pos abs_learned",
    "decoder_learned_pos": "--decoder-pos abs_learned",
    "no_token_positional_embeddings": "--encoder-pos none --decoder-pos none",
    "adaptive_input": None,
    "adaptive_softmax_cutoff": None,
    "adaptive_softmax_dropout": None,
    "adaptive_softmax_factor": None,
    "tie_adaptive_weights": None,
    "tie_adaptive_proj": None,
    "cross_self_attention": None,
    "no_cross_attention": None,
    "encoder_layers_to_keep": None,
    "decoder_layers_to_keep": None,
    "quant_noise_pq": None,
    "quant_noise_pq_block_size": None,
    "quant_noise_scalar": None,
    "encoder_embed_path": None,
    "decoder_embed_path": None,
    "encoder_xformers_att_config": None,
    "decoder_xformers_att_config": None,
    "base_layers": None,
    "base_sublayers": None,
    "base_shuffle": None,
    "char_inputs": None,
    "export": None,
    "min_params_to_wrap": "--ddp-backend other than fully_sharded (layers are not wrapped one by one)",
}


def _stock_defaults():
    defaults = argparse.Namespace()
    base_architecture(defaults)
    return vars(defaults)


STOCK_DEFAULTS = _stock_defaults()


def position_specs(args):
    """The encoder's and the decoder's :class:`PositionSpec` from the command line or a
    checkpoint's arguments; ``--max-relative-position`` is the default ``k`` of the specs'
    schemes (checkpoints before scheme settings carry it)."""
    k = getattr(args, "max_relative_position", None)
    if k is not None and k < 1:
        raise ValueError(f"--max-relative-position must be >= 1, got {k}")
    legacy = {} if k is None else {"k": k}
    specs = (PositionSpec.parse(args.encoder_pos, "--encoder-pos", legacy),
             PositionSpec.parse(args.decoder_pos, "--decoder-pos", legacy))
    if k is not None and not any("k" in _field_names(name) for spec in specs for name, _ in spec.schemes):
        logger.warning("--max-relative-position %d is not used: no scheme of --encoder-pos %s or "
                       "--decoder-pos %s has a clipping distance k", k, *specs)
    return specs


def _field_names(name):
    return {field.name for field in dataclasses.fields(SCHEMES[name].Settings)}


def reject_misspelled(args, add_args):
    """An option of the model's that no parser knows but that is one letter or so from one of
    ours (``--model-overrides "{'encoder_poss': 'rope'}"``, which fairseq sets silently) is
    refused, naming the option it resembles."""
    parser = argparse.ArgumentParser(add_help=False)
    add_args(parser)
    known = {action.dest for action in parser._actions}
    ours = sorted(action.dest for group in parser._action_groups if "fairseq-relpos" in (group.title or "")
                  for action in group._group_actions)
    for name in vars(args):
        close = [] if name in known else difflib.get_close_matches(name, ours, n=1, cutoff=0.8)
        if close:
            raise ValueError(f"unknown model option {name!r} (from --model-overrides?); did you mean {close[0]!r}?")


def reject_unsupported(args):
    for option, instead in UNSUPPORTED_OPTIONS.items():
        if getattr(args, option, None) not in (None, False, STOCK_DEFAULTS.get(option)):
            flag = "--" + option.replace("_", "-")
            hint = f"; use {instead}" if instead else ""
            raise ValueError(f"relpos_transformer does not support {flag}{hint}")
    output_dim = getattr(args, "decoder_output_dim", args.decoder_embed_dim)
    if output_dim != args.decoder_embed_dim:
        raise ValueError("relpos_transformer needs --decoder-output-dim equal to --decoder-embed-dim")
