"""A system's label by its effective position specs (fairseq_relpos.effective_label), and
the warning when options override an architecture's preset (docs/plugin.md)."""
import logging

import pytest

from fairseq_relpos import ARCHITECTURES, effective_label

from conftest import build_tiny_model


@pytest.mark.parametrize("arch, args, label", [
    ("transformer_abs", [], "transformer_abs"),
    ("transformer_abs", ["--encoder-pos", "alibi"], "transformer_abs[encoder alibi]"),
    ("transformer_abs", ["--encoder-pos=alibi", "--decoder-pos", "rope+t5:buckets=8"],
     "transformer_abs[encoder alibi, decoder rope+t5:buckets=8]"),
    ("transformer_abs", ["--lr", "1e-3", "--cross-pos", "alibi", "--max-tokens", "4096"], "transformer_abs[cross alibi]"),
    ("transformer_abs", ["--encoder-pos", "abs"], "transformer_abs"),  # the preset's own spec
    ("transformer_shape", ["--encoder-pos", "abs:shift=100"], "transformer_shape"),  # the same spec, spelt the old way
    ("transformer_rel", ["--max-relative-position", "8"], "transformer_rel[encoder shaw:k=8, decoder shaw:k=8]"),
    ("transformer_rel", ["--max-relative-position", "16"], "transformer_rel"),
    ("transformer_rel_abs", ["--encoder-pos", "shaw+abs"], "transformer_rel_abs[encoder shaw+abs]"),
    ("transformer_alibi_cross", ["--cross-pos", "none"], "transformer_alibi_cross[cross none]"),
    ("relpos_transformer", ["--encoder-pos", "alibi"], "relpos_transformer[encoder alibi, decoder alibi]"),
    ("relpos_transformer", ["--encoder-pos", "t5", "--decoder-pos", "shaw"], "relpos_transformer[encoder t5]"),
])
def test_a_system_is_labelled_by_its_effective_specs(arch, args, label):
    assert effective_label(arch, args) == label


def test_every_architecture_labels_itself():
    assert all(effective_label(arch) == arch for arch in ARCHITECTURES)


@pytest.mark.parametrize("arch, args, message", [
    ("transformer_wmt_en_de", [], "unknown architecture 'transformer_wmt_en_de'; expected relpos_transformer or"),
    ("transformer_abs", ["--encoder-pos", "bogus"], "--encoder-pos: unknown position scheme 'bogus'"),
    ("transformer_abs", ["--cross-pos", "t5"], "--cross-pos: t5 does not apply"),
    ("transformer_abs", ["--encoder-pos"], "--encoder-pos, --decoder-pos, --cross-pos, --max-relative-position"),
])
def test_labels_of_unknown_systems_are_refused(arch, args, message):
    with pytest.raises(ValueError, match=message):
        effective_label(arch, args)


def test_an_option_overriding_the_preset_is_a_warning(caplog):
    with caplog.at_level(logging.INFO, logger="fairseq_relpos"):
        build_tiny_model("transformer_abs", encoder_pos="alibi", max_relative_position=None)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["transformer_abs: the options change the architecture's position specs (--encoder-pos "
                        "alibi); this system is transformer_abs[encoder alibi], not transformer_abs"]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="fairseq_relpos"):
        build_tiny_model("relpos_transformer", encoder_pos="alibi", max_relative_position=None)
        build_tiny_model("transformer_abs", max_relative_position=None)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
