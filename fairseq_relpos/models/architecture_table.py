"""The architectures as data: presets of position specs over the ``relpos_transformer``
model.  It imports nothing, so that the recipes read it by its file without importing the
plugin, whose package registers the models with fairseq (seconds of imports) as it loads
(relpos_recipes/graphs/archs.py); ``architectures.py`` is its home for everyone else."""

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

#: the options that say what a system's position schemes are
POSITION_OPTIONS = ("--encoder-pos", "--decoder-pos", "--cross-pos", "--max-relative-position")
