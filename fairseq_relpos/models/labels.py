"""The label of a system: its architecture, and the position specs where the options change
the architecture's."""
import argparse

from fairseq.models import ARCH_CONFIG_REGISTRY

from ..positions import PositionSpec
from .architecture_table import ARCHITECTURES, POSITION_OPTIONS
from .options import position_specs

SIDES = ("encoder", "decoder", "cross")


def _specs(args):
    """The encoder's, the decoder's and the encoder-decoder attention's specs of ``args``."""
    return (*position_specs(args), PositionSpec.parse_across(args.cross_pos))


def overridden_sides(arch, specs):
    """``(side, spec)`` for each side whose spec is not ``arch``'s preset."""
    preset = argparse.Namespace()
    ARCH_CONFIG_REGISTRY[arch](preset)
    return [(side, spec) for side, spec, default in zip(SIDES, specs, _specs(preset)) if str(spec) != str(default)]


def system_label(arch, overridden) -> str:
    if not overridden:
        return arch
    return f"{arch}[{', '.join(f'{side} {spec}' for side, spec in overridden)}]"


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
    return system_label(arch, overridden_sides(arch, _specs(options)))
