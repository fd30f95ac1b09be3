"""The ``relpos_transformer`` model and its architectures: presets over position schemes."""
import argparse
import dataclasses
import difflib
import logging
from types import SimpleNamespace

from fairseq.models import ARCH_CONFIG_REGISTRY, register_model, register_model_architecture
from fairseq.models.transformer import TransformerConfig, TransformerModel
from fairseq.models.transformer.transformer_legacy import base_architecture

from ..modules.attention import ATTENTION_IMPLS
from ..modules.flex import check_flex, covered_schemes, refuse_training_on_cpu, uncovered
from ..positions import SCHEMES, PositionSpec, settings_help
from .encoder_decoder import UNBOUNDED_POSITIONS, RelPosDecoder, RelPosEncoder

logger = logging.getLogger(__name__)

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
        _reject_misspelled(args, cls.add_args)
        relpos_base_architecture(args)
        _reject_unsupported(args)
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
        overridden = _overridden_sides(args.arch, (encoder_spec, decoder_spec, cross_spec))
        if overridden and args.arch != "relpos_transformer":
            logger.warning(
                "%s: the options change the architecture's position specs (%s); this system is %s, not %s",
                args.arch, " ".join(f"--{side}-pos {spec}" for side, spec in overridden), _label(args.arch, overridden),
                args.arch,
            )
        _accept_any_length(task, model)
        return model


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


SIDES = ("encoder", "decoder", "cross")


def _specs(args):
    """The encoder's, the decoder's and the encoder-decoder attention's specs of ``args``."""
    return (*position_specs(args), PositionSpec.parse_across(args.cross_pos))


def _overridden_sides(arch, specs):
    """``(side, spec)`` for each side whose spec is not ``arch``'s preset."""
    preset = argparse.Namespace()
    ARCH_CONFIG_REGISTRY[arch](preset)
    return [(side, spec) for side, spec, default in zip(SIDES, specs, _specs(preset)) if str(spec) != str(default)]


def _label(arch, overridden) -> str:
    if not overridden:
        return arch
    return f"{arch}[{', '.join(f'{side} {spec}' for side, spec in overridden)}]"


#: the options that say what a system's position schemes are
POSITION_OPTIONS = ("--encoder-pos", "--decoder-pos", "--cross-pos", "--max-relative-position")


def effective_label(arch: str, train_args=()) -> str:
    """The name of the system ``fairseq-train --arch ARCH TRAIN_ARGS…`` trains, for tables
    and plots: ``arch`` when its position specs are the architecture's own, else ``arch``
    followed by the sides that differ and their specs, in canonical form::

        effective_label("transformer_abs", ["--encoder-pos", "alibi"])  # 'transformer_abs[encoder alibi]'
        effective_label("transformer_rel", ["--max-relative-position", "8", "--lr", "1e-3"])
        # 'transformer_rel[encoder shaw:k=8, decoder shaw:k=8]'

    Sides are ``encoder``, ``decoder`` and ``cross`` (encoder-decoder attention).  Only
    :data:`POSITION_OPTIONS` count (as ``--opt value`` or ``--opt=value``); other arguments are
    ignored.  An unknown ``arch`` or a malformed spec raises ``ValueError`` naming it.  The label
    holds spaces, brackets and spec characters (``:=,+``): quote it in a shell, and do not use
    it as a file name."""
    if arch != "relpos_transformer" and arch not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {arch!r}; expected relpos_transformer or one of "
                         f"{', '.join(sorted(ARCHITECTURES))}")
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for option in POSITION_OPTIONS:
        parser.add_argument(option, type=int if option == "--max-relative-position" else str)
    try:
        options, _ = parser.parse_known_args([str(arg) for arg in train_args])
    except SystemExit:  # argparse's way of saying an option lacks its value
        raise ValueError(f"train arguments {list(train_args)!r}: one of {', '.join(POSITION_OPTIONS)} has no "
                         "valid value") from None
    ARCH_CONFIG_REGISTRY[arch](options)
    return _label(arch, _overridden_sides(arch, _specs(options)))


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


def _reject_misspelled(args, add_args):
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


def _reject_unsupported(args):
    for option, instead in UNSUPPORTED_OPTIONS.items():
        if getattr(args, option, None) not in (None, False, STOCK_DEFAULTS.get(option)):
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


#: the reference study's systems (Rosendahl et al. 2019) and ablations: arch -> position
#: spec of both stacks (docs/positions.md)
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
#: every architecture: the study's, the other papers' methods and today's standard ones
ARCHITECTURES = {
    **STUDY_ARCHITECTURES,
    "transformer_t5": "t5",  # Raffel et al. 2020
    "transformer_alibi": "alibi",  # Press et al. 2022
    "transformer_rope": "rope",  # Su et al. 2021
    "transformer_xl": "xl",  # Dai et al. 2019, as Huang et al. 2020 eq. 10
    "transformer_rel_scalar": "rel_scalar",  # Chen et al. 2021 eq. 11
    "transformer_abs_scalar": "abs_scalar",  # Chen et al. 2021 eq. 7
    "transformer_huang1": "huang1",  # Huang et al. 2020 methods 1-4
    "transformer_huang2": "huang2",
    "transformer_huang3": "huang3",
    "transformer_huang4": "huang4",
    "transformer_shape": "abs+rand:shift=100",  # Kiyono et al. 2021
    "transformer_kerple_log": "kerple_log",  # Chi et al. 2022
    "transformer_kerple_power": "kerple_power",
    "transformer_sandwich": "sandwich",  # Chi et al. 2023
    "transformer_fire": "fire",  # Li et al. 2024
    "transformer_ssmax": "rope+ssmax",  # Nakanishi 2025, over RoPE as in the paper's models
    "transformer_rand": "abs+rand:max=1024",  # Ruoss et al. 2023
    "transformer_alibi_cross": "alibi",  # ALiBi in every attention, encoder-decoder too (Marian)
}
#: the architectures with positions in encoder-decoder attention: arch -> --cross-pos spec
CROSS_ARCHITECTURES = {"transformer_alibi_cross": "alibi"}


def flex_covers(arch: str) -> bool:
    """Whether ``--attention-impl flex`` covers every attention scheme of ``arch``."""
    return not any(uncovered(PositionSpec.parse(spec)) for spec in (ARCHITECTURES[arch],
                                                                       CROSS_ARCHITECTURES.get(arch, "none")))


def _preset(spec, cross_spec):
    def architecture(args):
        _default(args, "encoder_pos", spec)
        _default(args, "decoder_pos", spec)
        _default(args, "cross_pos", cross_spec)
        relpos_base_architecture(args)

    return architecture


for _arch, _spec in ARCHITECTURES.items():
    register_model_architecture("relpos_transformer", _arch)(_preset(_spec, CROSS_ARCHITECTURES.get(_arch, "none")))
