"""``--attention-impl flex`` on a CUDA GPU, where FlexAttention is compiled into one kernel:
outputs, and the gradients of every parameter (tables, slopes and offsets, KERPLE's r1 and
r2, Shaw's key table, ssmax's s, the projections) and of the input, against a float64
reference, within 10x the reference path's error in float32 and 1.1x in float16 (the rule
of PyTorch's own FlexAttention tests; for the parameters whose gradient sums a term of every
logit, 100x and 10x, below); on a length of 64 mod 128 (the kernel's last block
partial), Tq != Tk (encoder-decoder attention), cached decoding steps, and tables shared by
layers.  Skipped where torch sees no GPU, as in CI; run with `pytest tests/plugin/test_gpu_flex.py`.
"""
import pytest
import torch

from fairseq_relpos.modules.attention import RelPosCrossAttention, RelPosSelfAttention, recorded_kernels
from fairseq_relpos.positions import PositionSpec
from fairseq_relpos.positions.base import StackContext

from conftest import build_tiny_model, tiny_dictionary
from test_flex import FLEX_ARCHS
from test_model_invariants import decoder_input, random_tokens

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA GPU")

EMBED_DIM, HEADS = 64, 4  # heads of 16: FlexAttention's kernel takes no narrower
LENGTH = 192  # 64 mod 128: the kernel's last block of 128 is partial
PADDED = 50  # the second row's padding
FUDGE = {torch.float32: 10.0, torch.float16: 1.1}
#: for a gradient summed over every logit of the batch (the positions' parameters; the keys'
#: bias, zero in exact arithmetic where a bias does not read the keys): FlexAttention adds
#: it up block by block where autograd reduces whole tensors, and on an H200 (torch 2.11)
#: its error reached 19x the reference path's in float32 (KERPLE's r2) and 6.5x in float16
#: (r1 of kerple_power), still under 1e-5 and 2e-2 of the gradient; a wrong term costs all of it
FUDGE_SUMMED = {torch.float32: 100.0, torch.float16: 10.0}
#: the covered schemes with kernel terms, their trained parameters made to count
SPECS = ["alibi", "alibi:trainable=true,slope=0.1,offset=0.3", "t5", "t5:heads=shared", "rel_scalar",
         "rel_scalar:clip=16", "kerple_log", "kerple_power", "sandwich", "huang1", "huang2:clip=32", "shaw_k",
         "shaw_k:heads=separate", "rope+alibi", "t5+ssmax", "shaw_k+kerple_log"]


@pytest.fixture(scope="module", autouse=True)
def exact_float32_and_room_to_compile():
    """TF32 matrix products off (their 10-bit mantissas would be the reference's error), and
    room for the many kernels this file compiles (one per scheme, precision and mask)."""
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
             torch._dynamo.config.recompile_limit)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    torch._dynamo.config.recompile_limit = 256
    yield
    (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
     torch._dynamo.config.recompile_limit) = saved


def context(causal=False, num_layers=1, cross=False):
    return StackContext(embed_dim=EMBED_DIM, num_heads=HEADS, num_layers=num_layers, causal=causal,
                        max_positions=256, cross=cross)


def three_copies(make, spec, stack):
    """The attention ``make(positions, impl)`` builds (a layer per layer of ``stack``), in
    float64 on the reference path (the golden one), then for the reference and the flex path;
    parameters of the positions drawn so that every term counts."""
    copies = []
    for impl in ("reference", "reference", "flex"):
        torch.manual_seed(0)
        layers = PositionSpec.parse(spec).build_attention_layers(stack)
        modules = [make(positions, impl) for positions in layers]
        for module in modules:
            for name, parameter in module.positions.named_parameters():
                if name.rsplit(".", 1)[-1] not in ("slopes", "offsets", "r1", "r2", "s", "c", "threshold_scale"):
                    torch.nn.init.normal_(parameter, std=0.5)
        copies.append(torch.nn.ModuleList(modules).cuda())
    copies[0].double()
    return copies


def padding_mask(causal, batch=2, length=LENGTH):
    mask = torch.zeros(batch, length, dtype=torch.bool, device="cuda")
    if causal:
        mask[1, length - PADDED:] = True  # targets: padded on the right
    else:
        mask[1, :PADDED] = True  # sources: on the left
    return mask


def run(layers, x, dtype, forward):
    """Outputs and gradients (every parameter, the input) of ``forward(layers, x)``."""
    layers = layers.to(dtype)
    x = x.detach().to(dtype).requires_grad_()
    out = forward(layers, x)
    torch.manual_seed(1)
    weights = torch.randn(out.shape, device="cuda", dtype=torch.float64)
    (out.double() * weights).sum().backward()
    grads = {name: p.grad for name, p in layers.named_parameters()}
    grads["input"] = x.grad
    return out, grads


def check(golden, reference, flex, dtype, what, rows=None, fudge=FUDGE):
    """PyTorch's rule: flex's mean error against float64 within ``fudge`` x the reference
    path's (with a floor at the precision's epsilon, where the reference path is exact)."""
    golden, reference, flex = (t if rows is None else t[rows] for t in (golden, reference, flex))
    assert torch.isfinite(reference).all(), f"{what}: not finite on the reference path"
    assert torch.isfinite(flex).all(), f"{what}: not finite"
    reference_error = (reference.double() - golden).abs().mean().item()
    flex_error = (flex.double() - golden).abs().mean().item()
    floor = torch.finfo(dtype).eps * golden.abs().mean().item()
    assert flex_error <= fudge[dtype] * max(reference_error, floor), (
        f"{what}: flex's error {flex_error:.3e} exceeds {fudge[dtype]}x the reference path's {reference_error:.3e}")


def summed_over_logits(name):
    return ".positions." in f".{name}" or name.endswith("k_proj.bias")


def check_all(copies, x, dtype, forward, rows=None):
    (golden, golden_grads), (reference, reference_grads), (flex, flex_grads) = (
        run(layers, x, torch.float64 if index == 0 else dtype, forward) for index, layers in enumerate(copies))
    check(golden, reference, flex, dtype, "output", rows)
    assert set(flex_grads) == set(golden_grads)
    for name, grad in golden_grads.items():
        assert flex_grads[name] is not None, f"{name} got no gradient through flex"
        check(grad, reference_grads[name], flex_grads[name], dtype, f"gradient of {name}",
              fudge=FUDGE_SUMMED if summed_over_logits(name) else FUDGE)


def self_attention(causal):
    return lambda positions, impl: RelPosSelfAttention(EMBED_DIM, HEADS, positions=positions, causal=causal,
                                                       impl=impl)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("causal", [False, True], ids=["encoder", "decoder"])
@pytest.mark.parametrize("spec", SPECS)
def test_flex_outputs_and_gradients_match_the_reference(spec, causal, dtype):
    copies = three_copies(self_attention(causal), spec, context(causal))
    padding = padding_mask(causal)
    x = torch.randn(LENGTH, 2, EMBED_DIM, device="cuda", dtype=torch.float64)
    with recorded_kernels() as kernels:
        check_all(copies, x, dtype, lambda layers, x: layers[0](x, padding)[0], rows=~padding.t())
    assert ("flex" in [kernel for module, kernel in kernels if module is copies[2][0]])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("spec", ["alibi", "alibi+ssmax", "alibi:trainable=false,slope=0.5"])
def test_flex_across_sequences(spec, dtype):
    """Encoder-decoder attention (--cross-pos): 70 target queries, 192 left-padded source keys."""
    def make(positions, impl):
        return RelPosCrossAttention(EMBED_DIM, HEADS, positions=positions, impl=impl)

    copies = three_copies(make, str(PositionSpec.parse_across(spec)), context(cross=True))
    source = torch.randn(LENGTH, 2, EMBED_DIM, device="cuda", dtype=torch.float64)
    padding = padding_mask(causal=False)

    def forward(layers, x):
        return layers[0](x, source.to(x.dtype), source.to(x.dtype), padding)[0]

    check_all(copies, torch.randn(70, 2, EMBED_DIM, device="cuda", dtype=torch.float64), dtype, forward)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("spec", ["alibi", "t5", "rel_scalar", "huang2", "shaw_k", "kerple_power"])
def test_flex_decoding_steps_match_the_reference(spec, dtype):
    """A cached step of one token after 191 (the kernel's Tq = 1, Tk = 192), then of three."""
    copies = three_copies(self_attention(True), spec, context(causal=True))
    x = torch.randn(LENGTH + 3, 2, EMBED_DIM, device="cuda", dtype=torch.float64)
    outputs = []
    with torch.no_grad():
        for index, layers in enumerate(copies):
            layers = layers.to(torch.float64 if index == 0 else dtype)
            state, attention = {}, layers[0]
            inputs = x.to(torch.float64 if index == 0 else dtype)
            attention(inputs[:LENGTH - 1], None, state)
            steps = [attention(inputs[LENGTH - 1:LENGTH], None, state)[0], attention(inputs[LENGTH:], None, state)[0]]
            outputs.append(torch.cat(steps))
    check(*outputs, dtype, "cached decoding steps")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("spec", ["t5", "rel_scalar:layers=shared", "huang1:layers=shared"])
def test_flex_tables_shared_by_layers_get_every_layers_gradient(spec, dtype):
    copies = three_copies(self_attention(False), spec, context(num_layers=2))
    assert copies[0][0].positions is copies[0][1].positions
    padding = padding_mask(causal=False)
    x = torch.randn(LENGTH, 2, EMBED_DIM, device="cuda", dtype=torch.float64)
    check_all(copies, x, dtype, lambda layers, x: layers[1](layers[0](x, padding)[0], padding)[0],
              rows=~padding.t())


@pytest.mark.parametrize("arch", FLEX_ARCHS)
def test_flex_models_train_in_fp16_and_translate_as_the_reference_does(arch):
    """A training step in fp16 (finite gradients), and the reference's hypotheses in float32."""
    from fairseq.sequence_generator import SequenceGenerator

    dictionary = tiny_dictionary()
    dims = dict(encoder_embed_dim=EMBED_DIM, decoder_embed_dim=EMBED_DIM)
    reference = build_tiny_model(arch, dictionary, **dims).cuda()
    flex = build_tiny_model(arch, dictionary, attention_impl="flex", **dims).cuda()
    flex.load_state_dict(reference.state_dict())
    src = random_tokens(dictionary, [LENGTH, 120], left_pad=True).cuda()
    sample = {"net_input": {"src_tokens": src, "src_lengths": src.ne(dictionary.pad()).sum(1)}}
    searches = [SequenceGenerator([model], dictionary, beam_size=4, max_len_b=20, min_len=3).generate([model], sample)
                for model in (reference, flex)]
    for beams, flex_beams in zip(*searches):
        assert [h["tokens"].tolist() for h in flex_beams] == [h["tokens"].tolist() for h in beams]
    prev = decoder_input(dictionary, random_tokens(dictionary, [LENGTH, 90], left_pad=False, seed=1)).cuda()
    flex.half().train()
    logits, _ = flex(src, None, prev)
    torch.log_softmax(logits.float(), dim=-1).mean().backward()
    assert all(torch.isfinite(p.grad).all() for p in flex.parameters() if p.grad is not None)
