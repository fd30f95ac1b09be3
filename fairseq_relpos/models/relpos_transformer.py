"""The ``relpos_transformer`` model and its architectures: presets over position schemes."""
import argparse
import logging
from types import SimpleNamespace

from fairseq.models import ARCH_CONFIG_REGISTRY, register_model, register_model_architecture
from fairseq.models.transformer import TransformerConfig, TransformerModel
from fairseq.models.transformer.transformer_legacy import base_architecture

from ..positions import PositionSpec, scheme_names
from .encoder_decoder import RelPosDecoder, RelPosEncoder

logger = logging.getLogger(__name__)

DEFAULT_MAX_RELATIVE_POSITION = 16  # 004 and Shaw's base model

#: stock transformer options this model does not implement, with what to use instead
UNSUPPORTED_OPTIONS = {
    "encoder_learned_pos": "--encoder-pos abs_learned",
    "decoder_learned_pos": "--decoder-pos abs_learned",
    "no_token_positional_embeddings": "--encoder-pos none --decoder-pos none",
    "adaptive_input": None,
    "adaptive_softmax_cutoff": None,
    "cross_self_attention": None,
    "no_cross_attention": None,
    "encoder_layers_to_keep": None,
    "decoder_layers_to_keep": None,
    "tie_adaptive_weights": None,
    "quant_noise_pq": None,
    "encoder_embed_path": None,
    "decoder_embed_path": None,
}


@register_model("relpos_transformer")
class RelPosTransformerModel(TransformerModel):
    """Transformer (Vaswani et al.) whose encoder and decoder each take their position
    information from a scheme (``--encoder-pos``, ``--decoder-pos``; SPEC §1)."""

    @classmethod
    def hub_models(cls):
        return {}

    @staticmethod
    def add_args(parser):
        TransformerModel.add_args(parser)
        group = parser.add_argument_group("position schemes (fairseq-relpos)")
        specs = ", ".join(scheme_names())
        group.add_argument(
            "--encoder-pos", metavar="SPEC",
            help=f"encoder position scheme: one of {specs}, or INPUT+ATTENTION such as abs+shaw",
        )
        group.add_argument("--decoder-pos", metavar="SPEC", help="decoder position scheme, as --encoder-pos")
        group.add_argument(
            "--max-relative-position", type=int, metavar="K",
            help=f"clipping distance k of relative schemes (default {DEFAULT_MAX_RELATIVE_POSITION})",
        )

    @classmethod
    def build_model(cls, args, task):
        relpos_base_architecture(args)
        _reject_unsupported(args)
        if args.max_relative_position < 1:
            raise ValueError(f"--max-relative-position must be >= 1, got {args.max_relative_position}")
        encoder_spec = PositionSpec.parse(args.encoder_pos, "--encoder-pos")
        decoder_spec = PositionSpec.parse(args.decoder_pos, "--decoder-pos")
        cfg = TransformerConfig.from_namespace(args)

        src_dict, tgt_dict = task.source_dictionary, task.target_dictionary
        encoder_embed = cls.build_embedding(args, src_dict, cfg.encoder.embed_dim)
        if cfg.share_all_embeddings:
            if src_dict != tgt_dict:
                raise ValueError("--share-all-embeddings requires a joined dictionary")
            if cfg.encoder.embed_dim != cfg.decoder.embed_dim:
                raise ValueError("--share-all-embeddings requires --encoder-embed-dim to match --decoder-embed-dim")
            decoder_embed = encoder_embed
            cfg.share_decoder_input_output_embed = True
        else:
            decoder_embed = cls.build_embedding(args, tgt_dict, cfg.decoder.embed_dim)

        k = args.max_relative_position
        encoder = RelPosEncoder(cfg, encoder_spec, k, src_dict, encoder_embed)
        decoder = RelPosDecoder(cfg, decoder_spec, k, tgt_dict, decoder_embed)
        model = cls(args, encoder, decoder)
        logger.info(
            "relpos_transformer: encoder %s, decoder %s, k=%d, %s parameters",
            encoder_spec, decoder_spec, k, f"{count_parameters(model):,}",
        )
        return model


def build_standalone_model(arch: str, dictionary, **options) -> "RelPosTransformerModel":
    """A model of ``arch`` over one dictionary (both sides) without a fairseq task, with
    ``options`` as on the command line (``encoder_layers=2``…): for tests and benchmarks."""
    args = argparse.Namespace(arch=arch, **options)
    ARCH_CONFIG_REGISTRY[arch](args)
    task = SimpleNamespace(source_dictionary=dictionary, target_dictionary=dictionary)
    return RelPosTransformerModel.build_model(args, task)


def count_parameters(model) -> int:
    """Trained parameters, each shared tensor counted once."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _reject_unsupported(args):
    for option, instead in UNSUPPORTED_OPTIONS.items():
        if getattr(args, option, None):
            flag = "--" + option.replace("_", "-")
            hint = f"; use {instead}" if instead else ""
            raise ValueError(f"relpos_transformer does not support {flag}{hint}")
    output_dim = getattr(args, "decoder_output_dim", args.decoder_embed_dim)
    if output_dim != args.decoder_embed_dim:
        raise ValueError("relpos_transformer needs --decoder-output-dim equal to --decoder-embed-dim")


@register_model_architecture("relpos_transformer", "relpos_transformer")
def relpos_base_architecture(args):
    """Transformer base (6+6 layers, d 512, FFN 2048, 8 heads, dropout 0.1), embeddings not
    shared; position tables hold 1024 positions so that data filtering, not the model,
    bounds the training lengths."""
    args.encoder_pos = getattr(args, "encoder_pos", None) or "shaw"
    args.decoder_pos = getattr(args, "decoder_pos", None) or args.encoder_pos
    args.max_relative_position = getattr(args, "max_relative_position", None) or DEFAULT_MAX_RELATIVE_POSITION
    args.max_source_positions = getattr(args, "max_source_positions", None) or 1024
    args.max_target_positions = getattr(args, "max_target_positions", None) or 1024
    base_architecture(args)


#: the reference study's systems (004) and ablations: arch -> position spec for both stacks
STUDY_ARCHITECTURES = {
    "transformer_abs": "abs",  # Absolute
    "transformer_rel": "shaw",  # Relative
    "transformer_rel_k": "shaw_k",  # Relative, γ^K only
    "transformer_rel_v": "shaw_v",  # Shaw's a^V-only ablation
    "transformer_rel_sin": "shaw_sin",  # Relative sinusoidal
    "transformer_rel_abs": "abs+shaw",  # Relative and absolute
    "transformer_lstm_pos": "lstm",  # LSTM
    "transformer_nope": "none",  # no position at all
    "transformer_abs_learned": "abs_learned",  # learned absolute
}


def _preset(spec):
    def architecture(args):
        args.encoder_pos = getattr(args, "encoder_pos", None) or spec
        args.decoder_pos = getattr(args, "decoder_pos", None) or spec
        relpos_base_architecture(args)

    return architecture


for _arch, _spec in STUDY_ARCHITECTURES.items():
    register_model_architecture("relpos_transformer", _arch)(_preset(_spec))
