"""Positions as an explicit input (docs/positions.md, "Training positions"): randomized
positions (Ruoss et al. 2023) and SHAPE's shift (Kiyono et al. 2021) are one mechanism, the
stack's positions, drawn while training and read by every scheme of the stack; at inference
and in cached decoding the tokens sit at 0 … n-1."""
import pytest
import torch

from fairseq_relpos.positions.base import TableTooShort

from conftest import build_tiny_model, tiny_dictionary
from test_model_invariants import decoder_input, random_tokens


@pytest.fixture(scope="module")
def dictionary():
    return tiny_dictionary()


def drawn(stack, padding_mask):
    return stack._positions(padding_mask, 0, None)


def test_randomized_positions_are_a_sorted_sample_drawn_while_training_only(dictionary):
    model = build_tiny_model("transformer_rand", dictionary)  # abs+rand:max=1024 in both stacks
    padding_mask = torch.tensor([[True, True, False, False, False, False], [False] * 6])  # left-padded source
    model.train()
    torch.manual_seed(0)
    draws = [drawn(model.encoder, padding_mask) for _ in range(20)]
    for positions in draws:
        columns = positions.columns
        assert columns.shape == (6,) and bool((columns[1:] > columns[:-1]).all())  # sorted and distinct
        assert 0 <= int(columns[0]) and int(columns[-1]) < 1024
        rows = positions.rows(padding_mask)
        # the padded row's tokens keep the batch's gaps and start where the unpadded row starts
        assert torch.equal(rows[0, 2:], columns[2:] - columns[2] + columns[0]) and torch.equal(rows[1], columns)
    assert len({tuple(p.columns.tolist()) for p in draws}) == 20
    model.eval()
    counted = drawn(model.encoder, padding_mask)
    assert counted.columns.tolist() == list(range(6)) and counted.rows(padding_mask)[0].tolist() == [0, 0, 0, 1, 2, 3]


def test_shape_offsets_are_drawn_per_sequence_while_training_only(dictionary):
    model = build_tiny_model("transformer_shape", dictionary)  # abs+rand:shift=100
    padding_mask = torch.zeros(64, 5, dtype=torch.bool)
    torch.manual_seed(0)
    rows = drawn(model.decoder.train(), padding_mask).rows()
    assert len(set(rows[:, 0].tolist())) > 20 and int(rows.max()) <= 104
    assert torch.equal(rows - rows[:, :1], torch.arange(5).expand(64, 5))
    assert torch.equal(drawn(model.decoder.eval(), padding_mask).rows(), torch.arange(5).unsqueeze(0))


@pytest.mark.parametrize("spec", ["abs", "rope", "alibi", "t5", "shaw", "xl", "rel_scalar:clip=8", "abs_scalar",
                                  "kerple_log", "kerple_power", "sandwich", "fire", "rope+ssmax"])
def test_a_training_pass_reads_the_drawn_positions(spec, dictionary):
    """Dropout off, a training pass of SPEC+rand equals an evaluation pass of SPEC fed the
    positions that were drawn; without them it differs."""
    sizes = dict(max_source_positions=64, max_target_positions=64)  # what rand:max=64 can place
    randomized = build_tiny_model("relpos_transformer", dictionary, encoder_pos=f"{spec}+rand:max=64",
                                  decoder_pos=f"{spec}+rand:max=64", **sizes)
    plain = build_tiny_model("relpos_transformer", dictionary, encoder_pos=spec, decoder_pos=spec, **sizes)
    plain.load_state_dict(randomized.state_dict(), strict=True)  # rand has no parameters
    src = random_tokens(dictionary, [9, 5], left_pad=True)
    prev = decoder_input(dictionary, random_tokens(dictionary, [7, 7], left_pad=False, seed=1))
    seen = {}

    def recording(stack, draw):
        def positions(padding_mask, start, incremental_state):
            seen[stack] = draw(padding_mask, start, incremental_state)
            return seen[stack]
        return positions

    randomized.encoder._positions = recording("encoder", randomized.encoder._positions)
    randomized.decoder._positions = recording("decoder", randomized.decoder._positions)
    torch.manual_seed(0)
    with torch.no_grad():
        trained, _ = randomized.train()(src, None, prev)
        counted, _ = plain(src, None, prev)
        plain.encoder._positions = lambda *args: seen["encoder"]
        plain.decoder._positions = lambda *args: seen["decoder"]
        fed, _ = plain(src, None, prev)
    assert not seen["encoder"].columns.equal(torch.arange(9))
    torch.testing.assert_close(trained, fed, atol=1e-5, rtol=1e-4)
    assert not torch.allclose(trained, counted, atol=1e-3)


def test_randomized_positions_beyond_a_table_are_refused_when_built(dictionary):
    with pytest.raises(ValueError, match=r"--encoder-pos: rand:max=2048 draws positions up to 2047, beyond the "
                                         r"1024 positions of the table of abs_learned \(--max-source-positions\)"):
        build_tiny_model("relpos_transformer", dictionary, encoder_pos="abs_learned+rand:max=2048",
                         decoder_pos="abs_learned")


def test_fewer_positions_to_draw_from_than_a_training_sentence_may_have_are_refused_when_built(dictionary):
    """rand:max=20 with --max-source-positions 1024 would fail in the middle of a training, at
    the first sentence of more than 20 tokens: it is refused when the model is built."""
    with pytest.raises(ValueError, match=r"--encoder-pos: rand:max=20 draws the positions of a training sentence "
                                         r"from 0…19, but --max-source-positions 1024 lets in sentences of up to "
                                         r"1024 tokens; set max to at least 1024, or --max-source-positions to at "
                                         r"most 20"):
        build_tiny_model("relpos_transformer", dictionary, encoder_pos="rope+rand:max=20", decoder_pos="rope")
    build_tiny_model("relpos_transformer", dictionary, encoder_pos="rope+rand:max=20", decoder_pos="rope",
                     max_source_positions=20)


def test_a_training_sequence_longer_than_the_positions_to_draw_from_is_refused(dictionary):
    model = build_tiny_model("relpos_transformer", dictionary, encoder_pos="rope+rand:max=8", decoder_pos="rope",
                             max_source_positions=8)
    src = random_tokens(dictionary, [12], left_pad=True)
    with pytest.raises(ValueError, match=r"rand:max=8 \(encoder\): a training sequence of 12 tokens needs 12 "
                                         "distinct positions; raise max"):
        model.train().encoder(src)
    model.eval().encoder(src)  # at inference positions are counted: any length


def test_a_shifted_learned_table_refuses_positions_beyond_it(dictionary):
    model = build_tiny_model("relpos_transformer", dictionary, encoder_pos="abs_learned+rand:shift=20",
                             decoder_pos="abs_learned", max_source_positions=16)
    src = random_tokens(dictionary, [12], left_pad=True)
    torch.manual_seed(1)
    with pytest.raises(TableTooShort, match=r"abs_learned \(encoder\): position \d+ exceeds its table of 16"):
        for _ in range(10):  # some offset > 4 is drawn
            model.train().encoder(src)
