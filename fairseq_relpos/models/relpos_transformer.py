"""The ``relpos_transformer`` model, and its architectures registered with fairseq: presets
over position schemes (the table is ``architectures.py``, the checks of the options
``options.py``, a system's label ``labels.py``)."""
import argparse
import logging
from types import SimpleNamespace

from fairseq.models import ARCH_CONFIG_REGISTRY, register_model, register_model_architecture
from fairseq.models.transformer import TransformerConfig, TransformerModel
from fairseq.models.transformer.transformer_legacy import base_architecture

from ..modules.attention import ATTENTION_IMPLS
from ..modules.flex import check_flex, covered_schemes, refuse_training_on_cpu
from ..positions import SCHEMES, PositionSpec, settings_help
# the table, the option checks and the label, imported from here since the first releases
from .architectures import ARCHITECTURES, CROSS_ARCHITECTURES, STUDY_ARCHITECTURES, flex_covers  # noqa: F401
from .encoder_decoder import UNBOUNDED_POSITIONS, RelPosDecoder, RelPosEncoder
from .labels import POSITION_OPTIONS, effective_label, overridden_sides, system_label  # noqa: F401
from .options import (STOCK_DEFAULTS, UNSUPPORTED_OPTIONS, position_specs, reject_misspelled,  # noqa: F401
                      reject_unsupported)

logger = logging.getLogger(__name__)


@register_model("relpos_transformer")
class RelPosTransformerModel(TransformerModel):
    """Transformer (Vaswani et al.) whose encoder and decoder each take their position
    information from a spec of position schemes (``--encoder-pos``, ``--decoder-pos``;
    docs/positions.md)."""

    @classmethod
    def hub_models(cls):
        return {}

    def load_state_dict(self, state_dict, strict=True, model_cfg=None, args=None):
        """A checkpoint whose parameters do not fit the model built for it (``--model-overrides``
        that gives a stack another scheme with parameters: ``shaw`` → ``rope``) is refused,
        naming what does not fit, rather than in torch's words."""
        try:
            return super().load_state_dict(state_dict, strict=strict, model_cfg=model_cfg, args=args)
        except RuntimeError as error:
            if "Unexpected key(s)" not in str(error) and "Missing key(s)" not in str(error):
                raise
            own, theirs = set(self.state_dict()), set(state_dict)
            extra, lacking = sorted(theirs - own), sorted(own - theirs)
            said = [f"{len(keys)} parameter(s) {what} ({', '.join(keys[:3])}{', …' if len(keys) > 3 else ''})"
                    for keys, what in ((extra, "this model has no place for"), (lacking, "it lacks")) if keys]
            raise ValueError(f"the checkpoint does not fit the model built for it: it has {' and '.join(said)}. It "
                             "was trained with other position schemes (or other sizes) than these options give it "
                             f"(encoder {getattr(self.args, 'encoder_pos', '?')}, decoder "
                             f"{getattr(self.args, 'decoder_pos', '?')}): a checkpoint keeps its schemes, and "
                             "--model-overrides may change only settings that hold no parameters "
                             "(rope:scaling=..., --cross-pos none)") from None

    @staticmethod
    def add_args(parser):
        TransformerModel.add_args(parser)
        group = parser.add_argument_group("position schemes (fairseq-relpos)")
        settings = "; ".join(f"{name}: {settings_help(name)}" for name in sorted(SCHEMES))
        group.add_argument(
            "--encoder-pos", metavar="SPEC",
            help=f"encoder position schemes: 'none', or NAME[:key=value,...] joined by '+' "
                 f"(abs+shaw:k=8, rope+alibi); schemes and their settings: {settings}",
        )
        group.add_argument("--decoder-pos", metavar="SPEC", help="decoder position schemes, as --encoder-pos")
        group.add_argument(
            "--cross-pos", metavar="SPEC",
            help="position schemes of the encoder-decoder attention: 'none' (default), 'alibi' "
                 "(Marian's: trained slopes and offsets on the distance from the target position to the "
                 "source position), 'ssmax' (logits scaled by s_h·log of the source's length) or "
                 "'alibi+ssmax', as NAME[:key=value,...]",
        )
        group.add_argument(
            "--max-relative-position", type=int, metavar="K",
            help="clipping distance k of the shaw schemes where the spec does not set it "
                 "(shaw:k=K does the same); default 16",
        )
        group.add_argument(
            "--attention-impl", choices=ATTENTION_IMPLS,
            help="reference (default): F.scaled_dot_product_attention, or the explicit softmax where a scheme "
                 "needs it; flex: FlexAttention computes the position terms inside its kernel (compiled on "
                 f"CUDA; on the CPU for inference only), for {', '.join(covered_schemes())}",
        )

    @classmethod
    def build_model(cls, args, task):
        reject_misspelled(args, cls.add_args)
        relpos_base_architecture(args)
        reject_unsupported(args)
        encoder_spec, decoder_spec = position_specs(args)
        cross_spec = PositionSpec.parse_across(args.cross_pos)
        if args.attention_impl == "flex":
            check_flex({"--encoder-pos": encoder_spec, "--decoder-pos": decoder_spec, "--cross-pos": cross_spec},
                       args.attention_dropout)
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

        encoder = RelPosEncoder(cfg, encoder_spec, src_dict, encoder_embed, args.attention_impl)
        decoder = RelPosDecoder(cfg, decoder_spec, tgt_dict, decoder_embed, cross_spec, args.attention_impl)
        model = cls(args, encoder, decoder)
        logger.info(
            "relpos_transformer: encoder %s, decoder %s%s, %s parameters%s",
            encoder_spec, decoder_spec, f", encoder-decoder attention {cross_spec}" if cross_spec.schemes else "",
            f"{count_parameters(model):,}", _table_note(model),
        )
        overridden = overridden_sides(args.arch, (encoder_spec, decoder_spec, cross_spec))
        if overridden and args.arch != "relpos_transformer":
            logger.warning(
                "%s: the options change the architecture's position specs (%s); this system is %s, not %s",
                args.arch, " ".join(f"--{side}-pos {spec}" for side, spec in overridden), system_label(args.arch, overridden),
                args.arch,
            )
        _accept_any_length(task, model)
        return model


def _table_note(model) -> str:
    """Where a stack's position tables bound the inputs, the bound and the option that sets it."""
    bounded = [f"{side} tables hold {stack.max_positions()} positions (--max-{kind}-positions at training time)"
               for side, kind, stack in (("encoder", "source", model.encoder), ("decoder", "target", model.decoder))
               if stack.max_positions() != UNBOUNDED_POSITIONS]
    return "; " + ", ".join(bounded) if bounded else ""


def _accept_any_length(task, model):
    """fairseq's translation task refuses inputs longer than its --max-source/target-positions
    (1024 by default) before any model sees them; here the options size position tables, so a
    side without tables takes inputs of any length (unless --truncate-source asks to cut)."""
    task_cfg = getattr(task, "cfg", None)
    if task_cfg is None or getattr(task_cfg, "truncate_source", False):
        return
    for option, stack in (("max_source_positions", model.encoder), ("max_target_positions", model.decoder)):
        if stack.max_positions() == UNBOUNDED_POSITIONS and getattr(task_cfg, option, None) is not None:
            setattr(task_cfg, option, UNBOUNDED_POSITIONS)


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


@register_model_architecture("relpos_transformer", "relpos_transformer")
def relpos_base_architecture(args):
    """Transformer base (6+6 layers, d 512, FFN 2048, 8 heads, dropout 0.1), embeddings not
    shared; position tables hold 1024 positions so that data filtering, not the model,
    bounds the training lengths."""
    _default(args, "encoder_pos", "shaw")
    _default(args, "decoder_pos", args.encoder_pos)
    _default(args, "cross_pos", "none")
    _default(args, "attention_impl", "reference")
    _default(args, "max_source_positions", 1024)
    _default(args, "max_target_positions", 1024)
    base_architecture(args)
    if args.attention_impl == "flex" and _parsed_training_options(args):
        refuse_training_on_cpu(args.cpu)


def _parsed_training_options(args) -> bool:
    """Whether ``args`` is fairseq-train's command line as it parses it: fairseq calls the
    architecture's function then, before it reads any data (the model's config it builds from
    later, and a checkpoint's, have a ``_name``; an architecture applied here has no ``cpu``)."""
    return not hasattr(args, "_name") and getattr(args, "cpu", None) is not None and hasattr(args, "max_update")


def _default(args, option, value):
    """Sets ``option`` unless the command line (or the checkpoint) gave it, even as '' or 0:
    an explicit value is honoured or refused, never replaced."""
    if getattr(args, option, None) is None:
        setattr(args, option, value)


def _preset(spec, cross_spec):
    def architecture(args):
        _default(args, "encoder_pos", spec)
        _default(args, "decoder_pos", spec)
        _default(args, "cross_pos", cross_spec)
        relpos_base_architecture(args)

    return architecture


for _arch, _spec in ARCHITECTURES.items():
    register_model_architecture("relpos_transformer", _arch)(_preset(_spec, CROSS_ARCHITECTURES.get(_arch, "none")))
