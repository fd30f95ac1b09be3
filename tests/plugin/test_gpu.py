"""Every architecture on a CUDA GPU: the CPU's numbers, fairseq's beam search on the device,
fp16 (what train.sh uses on a GPU) on sentences far longer than training's, and the kernels
attention reaches there (docs/performance.md): never the math kernel.

Skipped where torch sees no GPU, as in CI; run on a GPU machine with
`pytest tests/plugin/test_gpu.py`.
"""
import pytest
import torch

from torch.nn.attention import SDPBackend, sdpa_kernel

from fairseq_relpos import ARCHITECTURES
from fairseq_relpos.modules.attention import RelPosSelfAttention, recorded_kernels
from fairseq_relpos.positions import AttentionScheme, PositionSpec
from fairseq_relpos.positions.base import StackContext

from conftest import build_tiny_model, tiny_dictionary
from test_attention_kernels import TensorsOfSize
from test_flex import FLEX_ARCHS
from test_model_invariants import decoder_input, encode, random_tokens

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA GPU")

ARCHS = sorted(ARCHITECTURES)
# float32 on both devices; sums run in another order on the GPU
ATOL = RTOL = 1e-4


@pytest.fixture(scope="module", autouse=True)
def full_float32_matmuls():
    """TF32 matrix products (10-bit mantissas) would be ~1e-3 away from the CPU's."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


@pytest.fixture(scope="module")
def dictionary():
    return tiny_dictionary()


def padded_batch(dictionary, source_lengths, target_lengths):
    """Left-padded sources and right-padded decoder inputs, as fairseq batches them."""
    src = random_tokens(dictionary, source_lengths, left_pad=True)
    tgt = random_tokens(dictionary, target_lengths, left_pad=False, seed=1)
    prev = decoder_input(dictionary, tgt).masked_fill(tgt.eq(dictionary.pad()), dictionary.pad())
    return src, prev


def beam_search(model, dictionary, src):
    from fairseq.sequence_generator import SequenceGenerator

    generator = SequenceGenerator([model], dictionary, beam_size=4, max_len_b=20, min_len=3)
    sample = {"net_input": {"src_tokens": src, "src_lengths": src.ne(dictionary.pad()).sum(1)}}
    with torch.no_grad():
        return generator.generate([model], sample)


@pytest.mark.parametrize("arch", ARCHS)
def test_the_gpu_computes_the_cpus_logits(arch, dictionary):
    model = build_tiny_model(arch, dictionary)
    src, prev = padded_batch(dictionary, [9, 30, 4], [12, 5, 33])
    with torch.no_grad():
        cpu_logits, _ = model(src, None, prev)
        model.cuda()
        gpu_logits, _ = model(src.cuda(), None, prev.cuda())
    torch.testing.assert_close(gpu_logits.cpu(), cpu_logits, atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("arch", ARCHS)
def test_beam_search_on_the_gpu_finds_the_cpus_hypotheses(arch, dictionary):
    """fairseq's cached, reordered decoding on the device: the same hypotheses and scores."""
    model = build_tiny_model(arch, dictionary)
    src = random_tokens(dictionary, [8, 14, 3], left_pad=True)
    on_cpu = beam_search(model, dictionary, src)
    on_gpu = beam_search(model.cuda(), dictionary, src.cuda())
    for cpu_beams, gpu_beams in zip(on_cpu, on_gpu):
        assert [h["tokens"].tolist() for h in gpu_beams] == [h["tokens"].tolist() for h in cpu_beams]
        for cpu_hypo, gpu_hypo in zip(cpu_beams, gpu_beams):
            torch.testing.assert_close(gpu_hypo["positional_scores"].cpu(), cpu_hypo["positional_scores"],
                                       atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("arch", ARCHS)
def test_fp16_stays_close_to_float32_far_beyond_training_lengths(arch, dictionary):
    """Half precision on 300 tokens (position biases and rotations grow with distance):
    finite logits, those of real target tokens within 1% of float32's scale (a padded
    position's output is never read), cached decoding within the same, and finite
    gradients."""
    model = build_tiny_model(arch, dictionary).cuda()
    src, prev = padded_batch(dictionary, [300, 120], [310, 90])
    src, prev = src.cuda(), prev.cuda()
    with torch.no_grad():
        reference, _ = model(src, None, prev)
        model.half()
        half, _ = model(src, None, prev)
        encoder_out, state, steps = encode(model, src), {}, []
        for end in range(1, 41):
            steps.append(model.decoder(prev[:, :end], encoder_out, incremental_state=state)[0])
    scale = reference.abs().max().item()
    assert torch.isfinite(half).all()
    real = prev.ne(dictionary.pad())  # B x T
    torch.testing.assert_close(half.float()[real], reference[real], atol=1e-2 * scale, rtol=0)
    torch.testing.assert_close(torch.cat(steps, dim=1).float(), half[:, :40].float(),
                               atol=1e-2 * scale, rtol=0)

    model.train()
    logits, _ = model(src, None, prev)
    torch.log_softmax(logits.float(), dim=-1).mean().backward()
    for name, parameter in model.named_parameters():
        if parameter.grad is not None:
            assert torch.isfinite(parameter.grad).all(), name


FUSED = [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]


@pytest.mark.parametrize("impl", ["reference", "flex"])
@pytest.mark.parametrize("arch", ARCHS)
def test_no_attention_call_falls_back_to_the_math_kernel(arch, impl, dictionary):
    """In fp16, a training step on padded batches and a beam search with SDPA's math kernel
    disabled (SDPA raises where no fused kernel takes a call); each call's kernel is a fused
    one, the explicit softmax where a scheme needs it, or flex; decoder self-attention
    without a logit term is FlashAttention's (or cuDNN's)."""
    if impl == "flex" and arch not in FLEX_ARCHS:
        pytest.skip(f"--attention-impl flex does not cover {arch}")
    # heads of 16: FlexAttention's CUDA kernel takes no narrower
    model = build_tiny_model(arch, dictionary, attention_impl=impl, encoder_embed_dim=64,
                             decoder_embed_dim=64).cuda().half()
    src, prev = padded_batch(dictionary, [30, 9, 17], [25, 33, 8])
    with sdpa_kernel(FUSED), recorded_kernels() as kernels:
        logits, _ = model.train()(src.cuda(), None, prev.cuda())
        logits.float().mean().backward()
        beam_search(model.eval(), dictionary, src.cuda())
    used = {kernel for _, kernel in kernels}
    assert used <= {"cudnn_attention", "flash_attention", "efficient_attention", "explicit", "flex"}, used
    if not has_logit_terms(model.decoder.layers[0].self_attn.positions):
        for layer in model.decoder.layers:
            assert {kernel for module, kernel in kernels if module is layer.self_attn} <= {
                "flash_attention", "cudnn_attention"}


def has_logit_terms(positions):
    """Whether an attention scheme (or a chain) adds to or transforms the logits."""
    schemes = [] if positions is None else list(getattr(positions, "schemes", {"": positions}).values())
    return any(type(scheme).logit_bias is not AttentionScheme.logit_bias or scheme.transforms_logits
               or scheme.has_value_term for scheme in schemes)


def test_the_explicit_path_makes_one_float32_copy_in_fp16():
    """The softmax reads the fp16 logits and writes float32 once (CUDA's half-to-float softmax)."""
    context = StackContext(embed_dim=32, num_heads=4, num_layers=1, causal=True, max_positions=64)
    positions = PositionSpec.parse("huang2").build_attention_layers(context)[0]
    attention = RelPosSelfAttention(32, 4, positions=positions, causal=True).cuda().half().eval()
    x = torch.randn(11, 3, 32, device="cuda", dtype=torch.half)
    with torch.no_grad(), TensorsOfSize(numel=3 * 4 * 11 * 11, dtype=torch.float32) as counter:
        attention(x, need_weights=True)
    assert counter.count == 1
