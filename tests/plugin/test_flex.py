"""``--attention-impl flex`` on the CPU (docs/performance.md): FlexAttention's eager forward
computes what the reference path computes, for every scheme it covers, alone and in
combination, with padding, drawn positions, cached decoding and beam search; bad input is
refused by name before any work.  The CPU has no FlexAttention backward, and the fused
kernel is CUDA's: tests/plugin/test_gpu_flex.py checks gradients and fp16 there."""
import warnings
from types import SimpleNamespace

import pytest
import torch

from fairseq_relpos import ARCHITECTURES, RelPosTransformerModel
from fairseq_relpos.models.architectures import flex_covers
from fairseq_relpos.modules.attention import RelPosSelfAttention, recorded_kernels
from fairseq_relpos.modules.flex import covered_schemes
from fairseq_relpos.positions import SCHEMES, AttentionScheme, PositionSpec
from fairseq_relpos.positions.base import Positions, StackContext

from conftest import TINY_DIMS, build_tiny_model, tiny_dictionary
from test_model_invariants import decoder_input, encode, random_tokens
from test_schemes import DRAWN_COLUMNS, left_padding_mask, right_padding_mask

ATOL = 1e-5
#: every covered scheme with its defaults, then settings and combinations
FLEX_SPECS = covered_schemes() + [
    "alibi:trainable=true,slope=0.1,offset=0.3", "t5:buckets=8,max_distance=12", "t5:heads=shared",
    "rel_scalar:clip=3", "rel_scalar:heads=shared", "huang1:clip=2", "huang2:clip=3,heads=shared",
    "shaw_k:k=2,heads=separate", "rope+alibi", "shaw_k+t5", "t5+huang1", "kerple_power+rope", "sandwich+ssmax:s=2",
    "alibi+ssmax",
]


FLEX_ARCHS = [arch for arch in sorted(ARCHITECTURES) if flex_covers(arch)]


@pytest.fixture(scope="module", autouse=True)
def unfused_flex_on_the_cpu_is_expected():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
        yield


@pytest.fixture(scope="module")
def dictionary():
    return tiny_dictionary()


def attention_pair(spec, causal):
    """The same attention (positions with non-trivial parameters) on both paths."""
    torch.manual_seed(0)
    context = StackContext(embed_dim=32, num_heads=4, num_layers=1, causal=causal, max_positions=20)
    positions = PositionSpec.parse(spec).build_attention_layers(context)[0]
    for table in positions.parameters():
        torch.nn.init.normal_(table)
    reference = RelPosSelfAttention(32, 4, positions=positions, causal=causal).eval()
    flex = RelPosSelfAttention(32, 4, positions=positions, causal=causal, impl="flex").eval()
    flex.load_state_dict(reference.state_dict())
    return reference, flex


def both(reference, flex, *args, **kwargs):
    with torch.no_grad(), recorded_kernels() as kernels:
        expected, _ = reference(*args, **kwargs)
        actual, _ = flex(*args, **kwargs)
    return expected, actual, [kernel for module, kernel in kernels if module is flex]


@pytest.mark.parametrize("causal", [False, True], ids=["encoder", "decoder"])
@pytest.mark.parametrize("spec", FLEX_SPECS)
def test_flex_computes_the_reference_attention(spec, causal):
    reference, flex = attention_pair(spec, causal)
    lengths, total = [9, 5, 2], 9
    for padding in (left_padding_mask(lengths, total), right_padding_mask(lengths, total)):
        x = torch.randn(total, len(lengths), 32)
        expected, actual, kernels = both(reference, flex, x, padding)
        tokens = ~padding.t()  # T x B
        torch.testing.assert_close(actual[tokens], expected[tokens], atol=ATOL, rtol=1e-4)
        if spec not in ("rope", "ssmax"):  # a rotation or a scale alone leaves SDPA to it
            assert kernels == ["flex"]


@pytest.mark.parametrize("causal", [False, True], ids=["encoder", "decoder"])
@pytest.mark.parametrize("spec", ["alibi", "t5", "rel_scalar", "huang1", "huang2", "shaw_k", "sandwich",
                                  "kerple_log"])
def test_flex_reads_the_positions_it_is_given(spec, causal):
    """Drawn positions (rand), which the kernel reads from tensors of the columns."""
    reference, flex = attention_pair(spec, causal)
    padding = (right_padding_mask if causal else left_padding_mask)([9, 5, 2], 9)
    x = torch.randn(9, 3, 32)
    positions = Positions.of_batch(DRAWN_COLUMNS, padding, None)
    expected, actual, _ = both(reference, flex, x, padding, key_positions=positions)
    tokens = ~padding.t()
    torch.testing.assert_close(actual[tokens], expected[tokens], atol=ATOL, rtol=1e-4)


def flex_pair(arch, dictionary, **options):
    reference = build_tiny_model(arch, dictionary, **options)
    flex = build_tiny_model(arch, dictionary, attention_impl="flex", **options)
    flex.load_state_dict(reference.state_dict(), strict=True)
    return reference, flex


@pytest.mark.parametrize("arch", FLEX_ARCHS)
def test_flex_models_translate_as_the_reference_does(arch, dictionary):
    """Padded batches, cached decoding one and three tokens a step, and fairseq's beam search."""
    from fairseq.sequence_generator import SequenceGenerator

    reference, flex = flex_pair(arch, dictionary)
    src = random_tokens(dictionary, [9, 6, 3], left_pad=True)
    tgt = random_tokens(dictionary, [11, 4, 8], left_pad=False, seed=1)
    prev = decoder_input(dictionary, tgt).masked_fill(tgt.eq(dictionary.pad()), dictionary.pad())
    unpadded = decoder_input(dictionary, random_tokens(dictionary, [7] * 3, left_pad=False, seed=2))
    with torch.no_grad():
        expected, _ = reference(src, None, prev)
        actual, _ = flex(src, None, prev)
        encoder_out = encode(flex, src)
        full, _ = flex.decoder(unpadded, encoder_out)
        for tokens_per_step in (1, 3):
            state, steps = {}, []
            for end in range(tokens_per_step, unpadded.size(1) + tokens_per_step, tokens_per_step):
                steps.append(flex.decoder(unpadded[:, :end], encoder_out, incremental_state=state)[0])
            torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=ATOL, rtol=1e-4)
    real = tgt.ne(dictionary.pad())
    torch.testing.assert_close(actual[real], expected[real], atol=ATOL, rtol=1e-4)
    sample = {"net_input": {"src_tokens": src, "src_lengths": src.ne(dictionary.pad()).sum(1)}}
    searches = [SequenceGenerator([model], dictionary, beam_size=4, max_len_b=6, min_len=3).generate([model], sample)
                for model in (reference, flex)]
    for beams, flex_beams in zip(*searches):
        assert [h["tokens"].tolist() for h in flex_beams] == [h["tokens"].tolist() for h in beams]
        for hypo, flex_hypo in zip(beams, flex_beams):
            torch.testing.assert_close(flex_hypo["positional_scores"], hypo["positional_scores"], atol=1e-4, rtol=1e-4)


def test_flex_runs_where_a_scheme_has_terms_and_sdpa_elsewhere(dictionary):
    _, flex = flex_pair("transformer_alibi", dictionary)
    src = random_tokens(dictionary, [9, 6], left_pad=True)
    prev = decoder_input(dictionary, random_tokens(dictionary, [5, 5], left_pad=False, seed=1))
    with torch.no_grad(), recorded_kernels() as kernels:
        flex(src, None, prev)
    by_module = dict(kernels)
    layer = flex.decoder.layers[0]
    assert by_module[flex.encoder.layers[0].self_attn] == by_module[layer.self_attn] == "flex"
    assert by_module[layer.encoder_attn] == "flash_attention"  # no scheme there: SDPA


@pytest.mark.parametrize("arch, refused", [("transformer_rel", "shaw"), ("transformer_fire", "fire"),
                                           ("transformer_huang3", "huang3"), ("transformer_xl", "xl")])
def test_flex_refuses_a_scheme_it_does_not_cover(arch, refused, dictionary):
    with pytest.raises(ValueError, match=rf"--attention-impl flex does not cover {refused} \(--encoder-pos .*\): "
                                         r"expected schemes among alibi, .*or --attention-impl reference"):
        build_tiny_model(arch, dictionary, attention_impl="flex")


def test_flex_refuses_attention_dropout(dictionary):
    with pytest.raises(ValueError, match="--attention-impl flex has no attention dropout.*--attention-dropout 0"):
        build_tiny_model("transformer_t5", dictionary, attention_impl="flex", attention_dropout=0.1)


def test_flex_refuses_gradients_on_the_cpu_before_any_work(dictionary):
    _, flex = flex_pair("transformer_t5", dictionary)
    src = random_tokens(dictionary, [5, 3], left_pad=True)
    prev = decoder_input(dictionary, random_tokens(dictionary, [4, 4], left_pad=False, seed=1))
    with recorded_kernels() as kernels, pytest.raises(ValueError, match="--attention-impl flex computes gradients "
                                                                        "on CUDA devices only"):
        flex.train()(src, None, prev)
    assert not kernels  # refused before the first layer
    with pytest.raises(ValueError, match="--attention-impl flex"):
        flex.decoder(prev, None)


@pytest.mark.parametrize("device", [["--cpu"], []])
def test_flex_training_on_the_cpu_is_refused_as_fairseq_train_parses_its_options(device, dictionary, tmp_path,
                                                                                  monkeypatch):
    """fairseq-train --attention-impl flex on the CPU (--cpu, or no CUDA device) is refused
    as fairseq parses the command line, before it reads any data; a model built from a
    checkpoint's options (translation) is not."""
    from fairseq import options

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    command = [str(tmp_path / "no data yet"), "--user-dir", "fairseq_relpos", "--arch", "transformer_t5", *device]
    flex = ["--attention-impl", "flex", "--attention-dropout", "0"]
    with pytest.raises(ValueError, match=r"--attention-impl flex computes gradients on CUDA devices only .*, and this "
                                         rf"training runs on the CPU \({'--cpu' if device else 'no CUDA device'}\): "
                                         "train with --attention-impl reference"):
        options.parse_args_and_arch(options.get_training_parser(), command + flex)
    trained = options.parse_args_and_arch(options.get_training_parser(), command)
    vars(trained).update(TINY_DIMS, decoder_input_dim=32, decoder_output_dim=32, _name=trained.arch,
                         attention_impl="flex")  # a checkpoint's, overridden
    task = SimpleNamespace(source_dictionary=dictionary, target_dictionary=dictionary)
    assert RelPosTransformerModel.build_model(trained, task).encoder.layers[0].self_attn.impl == "flex"


def test_every_attention_scheme_says_whether_flex_covers_it():
    """The covered ones implement a kernel term (or need none); the others are refused."""
    attention = {name: scheme for name, scheme in SCHEMES.items() if issubclass(scheme, AttentionScheme)}
    assert set(covered_schemes()) == {"alibi", "huang1", "huang2", "kerple_log", "kerple_power", "rel_scalar", "rope",
                                      "sandwich", "shaw_k", "ssmax", "t5"}
    assert set(attention) - set(covered_schemes()) == {"abs_scalar", "fire", "huang3", "huang4", "shaw", "shaw_sin",
                                                       "shaw_v", "xl"}
