"""Invariants 2-5 (docs/positions.md) for every architecture, on tiny in-process models."""
import argparse
from types import SimpleNamespace

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from fairseq_relpos import ARCHITECTURES, RelPosTransformerModel, count_parameters
from fairseq_relpos.positions.base import PositionScheme, TableTooShort

from fairseq_relpos import STUDY_ARCHITECTURES as STUDY_ARCHS

from conftest import REPO_ROOT, build_tiny_model, tiny_dictionary

ARCHS = sorted(ARCHITECTURES)
ATOL = 1e-5


def random_tokens(dictionary, lengths, left_pad, seed=0):
    """B x max(lengths) sentences of random words ending in EOS, padded left or right."""
    generator = torch.Generator().manual_seed(seed)
    total = max(lengths)
    batch = torch.full((len(lengths), total), dictionary.pad())
    for row, length in enumerate(lengths):
        words = torch.randint(dictionary.nspecial, len(dictionary), (length - 1,), generator=generator)
        sentence = torch.cat([words, torch.tensor([dictionary.eos()])])
        if left_pad:
            batch[row, total - length:] = sentence
        else:
            batch[row, :length] = sentence
    return batch


def decoder_input(dictionary, target):
    """fairseq's prev_output_tokens: EOS, then the target shifted right (no padding here)."""
    return torch.cat([torch.full((target.size(0), 1), dictionary.eos()), target[:, :-1]], dim=1)


def encode(model, src):
    lengths = src.ne(model.encoder.dictionary.pad()).sum(1)
    return model.encoder(src, src_lengths=lengths)


@pytest.fixture(scope="module")
def dictionary():
    return tiny_dictionary()


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("tokens_per_step", [1, 3])
def test_incremental_decoding_equals_teacher_forcing(arch, tokens_per_step, dictionary):
    model = build_tiny_model(arch, dictionary)
    src = random_tokens(dictionary, [9, 6, 3], left_pad=True)
    prev = decoder_input(dictionary, random_tokens(dictionary, [11, 11, 11], left_pad=False, seed=1))
    with torch.no_grad():
        encoder_out = encode(model, src)
        full, _ = model.decoder(prev, encoder_out)
        state, steps = {}, []
        for end in range(tokens_per_step, prev.size(1) + tokens_per_step, tokens_per_step):
            steps.append(model.decoder(prev[:, :end], encoder_out, incremental_state=state)[0])
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=ATOL, rtol=1e-4)


@pytest.mark.parametrize("arch", ARCHS)
def test_incremental_decoding_survives_beam_reordering(arch, dictionary):
    model = build_tiny_model(arch, dictionary)
    beams = 2
    src = random_tokens(dictionary, [9, 4], left_pad=True).repeat_interleave(beams, dim=0)
    prev = decoder_input(dictionary, random_tokens(dictionary, [12] * 4, left_pad=False, seed=1))
    # as beam search does within each sentence: drop one hypothesis, copy another, swap
    new_order = torch.tensor([1, 1, 3, 2])
    with torch.no_grad():
        encoder_out, state = encode(model, src), {}
        for end in range(1, 7):
            model.decoder(prev[:, :end], encoder_out, incremental_state=state)
        model.decoder.reorder_incremental_state_scripting(state, new_order)
        encoder_out = model.encoder.reorder_encoder_out(encoder_out, new_order)
        prev = prev[new_order]
        steps = [model.decoder(prev[:, :end], encoder_out, incremental_state=state)[0]
                 for end in range(7, prev.size(1) + 1)]
        full, _ = model.decoder(prev, encode(model, src[new_order]))
    torch.testing.assert_close(torch.cat(steps, dim=1), full[:, 6:], atol=ATOL, rtol=1e-4)


@pytest.mark.parametrize("arch", ARCHS)
def test_beam_search_scores_equal_teacher_forced_scores(arch, dictionary):
    """fairseq's own beam search (incremental, with reordering) scores each hypothesis as the
    teacher-forced pass does."""
    from fairseq.sequence_generator import SequenceGenerator

    model = build_tiny_model(arch, dictionary)
    src = random_tokens(dictionary, [8, 5], left_pad=True)
    generator = SequenceGenerator([model], dictionary, beam_size=4, max_len_b=12, min_len=3)
    sample = {"net_input": {"src_tokens": src, "src_lengths": src.ne(dictionary.pad()).sum(1)}}
    with torch.no_grad():
        hypotheses = generator.generate([model], sample)
        for row, beams in enumerate(hypotheses):
            for hypo in beams:
                target = hypo["tokens"].unsqueeze(0)
                logits, _ = model(src[row:row + 1][:, src[row].ne(dictionary.pad())],
                                  None, decoder_input(dictionary, target))
                log_probs = torch.log_softmax(logits.float(), dim=-1)
                scores = log_probs.gather(-1, target.unsqueeze(-1)).squeeze()
                torch.testing.assert_close(scores, hypo["positional_scores"], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("arch", ARCHS)
def test_outputs_do_not_depend_on_the_rest_of_the_batch(arch, dictionary):
    model = build_tiny_model(arch, dictionary)
    src = random_tokens(dictionary, [5, 13, 9], left_pad=True)  # fairseq left-pads sources
    tgt = random_tokens(dictionary, [6, 10, 4], left_pad=False, seed=1)
    prev = decoder_input(dictionary, tgt).masked_fill(tgt.eq(dictionary.pad()), dictionary.pad())
    with torch.no_grad():
        batch_encoder = encode(model, src)["encoder_out"][0]  # T x B x C
        batch_logits, _ = model(src, None, prev)
        for row in range(src.size(0)):
            alone_src = src[row:row + 1][:, src[row].ne(dictionary.pad())]
            alone_prev = prev[row:row + 1][:, tgt[row].ne(dictionary.pad())]
            alone_encoder = encode(model, alone_src)["encoder_out"][0]
            alone_logits, _ = model(alone_src, None, alone_prev)
            length = alone_src.size(1)
            torch.testing.assert_close(batch_encoder[-length:, row], alone_encoder[:, 0], atol=ATOL, rtol=1e-4)
            torch.testing.assert_close(batch_logits[row, :alone_prev.size(1)], alone_logits[0], atol=ATOL, rtol=1e-4)


#: where implementations break whatever the scheme: the powers of two up to 1,024 (kernel
#: tiles and blocks; 1,024 is fairseq's default bound of positions)
GENERIC_EDGES = [2 ** power for power in range(4, 11)]
#: d = 16, one layer, two heads: every edge up to 1,024 of every architecture in seconds
EDGE_DIMS = dict(encoder_layers=1, decoder_layers=1, encoder_embed_dim=16, decoder_embed_dim=16,
                 encoder_ffn_embed_dim=32, decoder_ffn_embed_dim=32, encoder_attention_heads=2,
                 decoder_attention_heads=2, max_relative_position=None)


def length_edges(model):
    """The generic edges and every scheme's own (PositionScheme.length_edges)."""
    schemes = [module for module in model.modules() if isinstance(module, PositionScheme)]
    return sorted(set(GENERIC_EDGES).union(*(scheme.length_edges() for scheme in schemes)))


@pytest.mark.parametrize("arch", ARCHS)
def test_every_scheme_just_below_and_at_the_lengths_where_its_computation_changes(arch, dictionary):
    """At each length where a scheme's computation changes (a bucket, the clipping distance, a
    chunk of queries, a table's bound: its length_edges()) and at each power of two up to
    1,024, and one token below: in a batch of the two, the shorter (padded) sentence gets
    what it gets alone, and the longer, decoded step by step across the edge, what the
    batch's full pass gives it."""
    model = build_tiny_model(arch, dictionary, **EDGE_DIMS)
    for module in model.modules():
        if hasattr(module, "pairwise_chunk_elements"):
            module.pairwise_chunk_elements = 2 ** 20  # chunk edges of a few hundred tokens
    bound = min(model.max_positions())
    for edge in length_edges(model):
        if edge > bound:  # the first length beyond a table: refused, not computed
            with pytest.raises(TableTooShort):
                encode(model, random_tokens(dictionary, [edge], left_pad=True))
            edge -= 1
        lengths = [edge, edge - 1]
        where = f"{arch}, lengths {lengths}"
        src = random_tokens(dictionary, lengths, left_pad=True, seed=edge)  # fairseq left-pads sources
        tgt = random_tokens(dictionary, lengths, left_pad=False, seed=edge + 1)
        prev = decoder_input(dictionary, tgt).masked_fill(tgt.eq(dictionary.pad()), dictionary.pad())
        with torch.no_grad():
            batch_encoder_out = encode(model, src)
            batch_logits, _ = model.decoder(prev, batch_encoder_out)
            alone_encoder_out = encode(model, src[1:, 1:])
            alone_logits, _ = model.decoder(prev[1:, :-1], alone_encoder_out)
            torch.testing.assert_close(batch_encoder_out["encoder_out"][0][1:, 1], alone_encoder_out["encoder_out"][0][:, 0],
                                       atol=ATOL, rtol=1e-4, msg=lambda m: f"{where}: encoder, batched and alone: {m}")
            torch.testing.assert_close(batch_logits[1, :-1], alone_logits[0], atol=ATOL, rtol=1e-4,
                                       msg=lambda m: f"{where}: decoder, batched and alone: {m}")
            encoder_out, state = model.encoder.reorder_encoder_out(batch_encoder_out, torch.tensor([0])), {}
            steps = [model.decoder(prev[:1, :end], encoder_out, incremental_state=state)[0]
                     for end in range(max(1, edge - 2), edge + 1)]  # its prefix at once, then step by step
            torch.testing.assert_close(torch.cat(steps, dim=1)[0], batch_logits[0], atol=ATOL, rtol=1e-4,
                                       msg=lambda m: f"{where}: decoder, step by step and full: {m}")


@pytest.mark.parametrize("arch", ARCHS)
def test_lengths_far_beyond_the_position_capacity(arch, dictionary):
    """Invariant 4: a scheme extrapolates, or its table refuses clearly and fairseq is told
    the limit (so that fairseq-generate refuses such inputs before running)."""
    model = build_tiny_model(arch, dictionary, max_source_positions=16, max_target_positions=16)
    src = random_tokens(dictionary, [60], left_pad=True)
    prev = decoder_input(dictionary, random_tokens(dictionary, [70], left_pad=False))
    if model.max_positions() == (16, 16):
        with pytest.raises(TableTooShort, match=r"\(encoder\): .* exceeds its table .*--max-source-positions"):
            encode(model, src)
        return
    with torch.no_grad():
        logits, _ = model(src, None, prev)
    assert torch.isfinite(logits).all()
    assert model.max_positions()[0] > 10_000


def test_learned_positions_refuse_longer_inputs(dictionary):
    model = build_tiny_model("transformer_abs_learned", dictionary, max_source_positions=16, max_target_positions=16)
    assert model.max_positions() == (16, 16)
    src = random_tokens(dictionary, [20], left_pad=True)
    with pytest.raises(ValueError, match="abs_learned .*: position 19 exceeds its table of 16 positions"):
        encode(model, src)


@pytest.mark.parametrize("arch", ARCHS)
def test_every_parameter_gets_a_gradient(arch, dictionary):
    """Invariant 5: DDP needs no find_unused_parameters."""
    model = build_tiny_model(arch, dictionary).train()
    src = random_tokens(dictionary, [7, 4], left_pad=True)
    tgt = random_tokens(dictionary, [6, 6], left_pad=False, seed=1)
    logits, _ = model(src, None, decoder_input(dictionary, tgt))
    torch.nn.functional.cross_entropy(logits.transpose(1, 2), tgt).backward()
    unused = [name for name, p in model.named_parameters() if p.grad is None]
    assert not unused


class ShapeRecorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.shapes = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.shapes += [tuple(t.shape) for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        return out


@pytest.mark.parametrize("arch", ARCHS)
def test_no_pairwise_vector_tensor(arch, dictionary):
    """Shaw §3.3: nothing of size B x H x n x n x d_head is ever materialised; a scheme that
    cannot avoid it (it says so by a chunk budget) stays within that budget."""
    model = build_tiny_model(arch, dictionary)
    n, heads, head_dim = 40, 4, 8
    for module in model.modules():
        if hasattr(module, "pairwise_chunk_elements"):
            module.pairwise_chunk_elements = 2 * heads * n * n  # as small as the n x n logits
    src = random_tokens(dictionary, [n, n], left_pad=True)
    prev = decoder_input(dictionary, random_tokens(dictionary, [n, n], left_pad=False))
    with torch.no_grad(), ShapeRecorder() as recorder:
        model(src, None, prev)
    pairwise_vectors = 2 * heads * n * n * head_dim
    biggest = max(recorder.shapes, key=lambda shape: torch.Size(shape).numel())
    assert torch.Size(biggest).numel() < pairwise_vectors // head_dim * 2, biggest


@pytest.mark.parametrize("arch", ARCHS)
def test_a_decoding_step_computes_only_its_new_rows(arch, dictionary):
    model = build_tiny_model(arch, dictionary)
    prefix = 29
    src = random_tokens(dictionary, [5], left_pad=True)
    prev = decoder_input(dictionary, random_tokens(dictionary, [prefix + 1], left_pad=False))
    with torch.no_grad():
        encoder_out, state = encode(model, src), {}
        model.decoder(prev[:, :prefix], encoder_out, incremental_state=state)
        with ShapeRecorder() as recorder:
            model.decoder(prev, encoder_out, incremental_state=state)
    quadratic = [shape for shape in recorder.shapes if list(shape).count(prefix + 1) >= 2]
    assert not quadratic


def test_parameter_counts():
    """Transformer-base sizes with a 1000-word vocabulary on each side: every architecture
    differs from transformer_abs by its position parameters only, derived here by hand
    (docs/positions.md)."""
    dictionary = tiny_dictionary(1000 - 4)
    base = dict(encoder_layers=6, decoder_layers=6, encoder_embed_dim=512, decoder_embed_dim=512,
                encoder_ffn_embed_dim=2048, decoder_ffn_embed_dim=2048,
                encoder_attention_heads=8, decoder_attention_heads=8, max_relative_position=16)
    with torch.device("meta"):  # shapes without storage or initialisation: 27 base models in 4 s, not 16
        counts = {arch: count_parameters(build_tiny_model(arch, dictionary, **base)) for arch in ARCHS}
    d, heads, head_dim, k, layers, n = 512, 8, 64, 16, 6, 1024
    both_stacks = lambda encoder_layer, decoder_layer: layers * (encoder_layer + decoder_layer)  # noqa: E731
    shaw_table = both_stacks((2 * k + 1) * head_dim, (k + 1) * head_dim)  # one table per layer
    distance_scalars = both_stacks(heads * (2 * n - 1), heads * n)  # signed distances, causal decoder
    distance_vectors = distance_scalars * head_dim
    lstm_encoder = 4 * (256 * 512 + 256 * 256 + 2 * 256) * 2  # two directions, 256 units each
    lstm_decoder = 4 * (512 * 512 + 512 * 512 + 2 * 512)
    position_parameters = {
        "transformer_abs": 0,
        "transformer_nope": 0,
        "transformer_rel_sin": 0,
        "transformer_shape": 0,
        "transformer_rand": 0,
        "transformer_alibi": 0,
        "transformer_alibi_cross": layers * 2 * heads,  # a slope and an offset per head in each decoder layer
        "transformer_rope": 0,
        "transformer_rel": 2 * shaw_table,
        "transformer_rel_abs": 2 * shaw_table,
        "transformer_rel_k": shaw_table,
        "transformer_rel_v": shaw_table,
        "transformer_abs_learned": 2 * n * d,
        "transformer_lstm_pos": lstm_encoder + lstm_decoder,
        "transformer_t5": 2 * 32 * heads,  # one buckets x heads table per stack
        "transformer_xl": both_stacks(d * d + 2 * heads * head_dim, d * d + 2 * heads * head_dim),
        "transformer_rel_scalar": distance_scalars,
        "transformer_abs_scalar": both_stacks(heads * n * head_dim, heads * n * head_dim),
        "transformer_huang1": both_stacks(heads * n, heads * n),  # |j - i| in 0 … n-1
        "transformer_huang2": distance_scalars,
        "transformer_huang3": distance_vectors,
        "transformer_huang4": distance_vectors,
        "transformer_kerple_log": both_stacks(2 * heads, 2 * heads),  # r1, r2 per head and layer
        "transformer_kerple_power": both_stacks(2 * heads, 2 * heads),
        "transformer_sandwich": 0,
        # f_θ: 1 -> 32 -> H with biases; c and L's multiplier
        "transformer_fire": both_stacks(2 * 32 + 32 * heads + heads + 2, 2 * 32 + 32 * heads + heads + 2),
        "transformer_ssmax": both_stacks(heads, heads),  # s per head and layer; RoPE has none
    }
    assert set(position_parameters) == set(ARCHS)
    absolute = counts["transformer_abs"]
    assert {arch: count - absolute for arch, count in counts.items()} == position_parameters


def test_explicit_position_options_are_honoured_or_refused(dictionary):
    with pytest.raises(ValueError, match="--max-relative-position must be >= 1, got 0"):
        build_tiny_model("transformer_rel", dictionary, max_relative_position=0)
    with pytest.raises(ValueError, match="--encoder-pos: empty position spec"):
        build_tiny_model("transformer_rel", dictionary, encoder_pos="")
    model = build_tiny_model("transformer_rel", dictionary, max_relative_position=5)
    assert model.encoder.layers[0].self_attn.positions.settings.k == 5
    model = build_tiny_model("relpos_transformer", dictionary, encoder_pos="rope+alibi", decoder_pos="t5:buckets=8")
    assert str(model.decoder.layers[0].self_attn.positions.settings.buckets) == "8"


def test_checkpoints_of_the_first_scheme_interface_load_and_translate_identically():
    """tests/data/v1_models.pt holds tiny models of every study architecture as the first
    scheme interface built them (their saved arguments, state dict and outputs on a fixed
    batch): today's code must load them strictly and compute the same outputs."""
    frozen = torch.load(REPO_ROOT / "tests/data/v1_models.pt", weights_only=True)
    dictionary = tiny_dictionary()
    task = SimpleNamespace(source_dictionary=dictionary, target_dictionary=dictionary)
    assert set(frozen["models"]) == set(STUDY_ARCHS)
    for arch, saved in frozen["models"].items():
        model = RelPosTransformerModel.build_model(argparse.Namespace(**saved["args"]), task).eval()
        model.load_state_dict(saved["state_dict"], strict=True)
        with torch.no_grad():
            logits, _ = model(frozen["src"], None, frozen["prev"])
        torch.testing.assert_close(logits, saved["logits"], atol=1e-6, rtol=1e-6, msg=arch)


def test_a_model_trains_after_inference_mode_decoding(dictionary):
    """Nothing built under torch.inference_mode() (as fairseq-generate runs) is reused later."""
    model = build_tiny_model("transformer_rel", dictionary)
    src = random_tokens(dictionary, [7, 4], left_pad=True)
    tgt = random_tokens(dictionary, [6, 6], left_pad=False, seed=1)
    with torch.inference_mode():
        model(src, None, decoder_input(dictionary, tgt))
    logits, _ = model.train()(src, None, decoder_input(dictionary, tgt))
    logits.sum().backward()
