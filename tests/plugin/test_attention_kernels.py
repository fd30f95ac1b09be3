"""What reaches the attention kernels (docs/performance.md), checked on the CPU for every
architecture: each call hands ``F.scaled_dot_product_attention`` what CUDA's fused kernels
take (a bias contiguous in the keys; a boolean key mask, built once per pass; no mask at all,
only ``is_causal``, in the causal self-attention of a full decoder pass); the explicit path
makes one float32 copy of the logits; encoder-decoder attention is fairseq's
``MultiheadAttention`` (parameters, initialisation, outputs, cached decoding) on SDPA.
Outputs are those of the code before these changes: the invariant suite and the frozen
checkpoints of tests/data check them."""
import pytest
import torch
import torch.nn.functional as F
from fairseq.modules import MultiheadAttention
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from fairseq_relpos import ARCHITECTURES
from fairseq_relpos.modules.attention import RelPosCrossAttention, RelPosSelfAttention, recorded_kernels
from fairseq_relpos.positions import PositionSpec
from fairseq_relpos.positions.base import StackContext

from conftest import build_tiny_model, tiny_dictionary
from test_model_invariants import decoder_input, encode, random_tokens

ARCHS = sorted(ARCHITECTURES)


@pytest.fixture(scope="module")
def dictionary():
    return tiny_dictionary()


class SdpaCalls:
    """Every call to F.scaled_dot_product_attention while a model runs, with the name of the
    attention module that made it."""

    def __init__(self, model, monkeypatch):
        self.calls, self._current = [], None
        names = {module: name for name, module in model.named_modules()}
        for module in names:
            if isinstance(module, (RelPosSelfAttention, RelPosCrossAttention)):
                module.register_forward_pre_hook(lambda m, args: setattr(self, "_current", names[m]))
        real = F.scaled_dot_product_attention

        def spy(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **kwargs):
            self.calls.append(dict(module=self._current, q=q, attn_mask=attn_mask, is_causal=is_causal,
                                   cudnn=torch.backends.cuda.cudnn_sdp_enabled()))
            return real(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale, **kwargs)

        monkeypatch.setattr(F, "scaled_dot_product_attention", spy)

    def of(self, part):
        return [call for call in self.calls if part in call["module"]]


def padded_batch(dictionary, target_left_pad=False):
    """Left-padded sources, and targets with their decoder inputs padded as fairseq pads them
    (on the right, or with --left-pad-target on the left)."""
    src = random_tokens(dictionary, [9, 5, 2], left_pad=True)
    tgt = random_tokens(dictionary, [7, 4, 7], left_pad=target_left_pad, seed=1)
    real = tgt.ne(dictionary.pad())
    prev = torch.full_like(tgt, dictionary.pad())
    for row in range(tgt.size(0)):
        prev[row, real[row]] = decoder_input(dictionary, tgt[row:row + 1, real[row]])[0]
    return src, tgt, prev


def is_key_mask(mask, batch, keys):
    """A boolean mask of the keys each query may see, the same for every query: B x 1 x 1 x Tk."""
    return mask.dtype == torch.bool and tuple(mask.shape) == (batch, 1, 1, keys)


def assert_fused_kernels_take(calls):
    """Each call's mask is what every fused CUDA kernel takes."""
    for call in calls:
        mask, q = call["attn_mask"], call["q"]
        if mask is None:
            continue
        assert not call["is_causal"]
        assert mask.stride(-1) == 1, (call["module"], mask.stride())  # every fused CUDA kernel needs it
        assert mask.dtype in (torch.bool, q.dtype), call["module"]
        if mask.is_floating_point():  # a bias: in rows the memory-efficient kernel does not copy
            assert all(stride % 8 == 0 for stride in mask.stride()[:-1]), (call["module"], mask.stride())


@pytest.mark.parametrize("arch", ARCHS)
def test_every_sdpa_call_takes_what_the_fused_kernels_take(arch, dictionary, monkeypatch):
    model = build_tiny_model(arch, dictionary)
    spy = SdpaCalls(model, monkeypatch)
    src, _, prev = padded_batch(dictionary)
    with torch.no_grad():
        model(src, None, prev)
    assert spy.of("decoder.layers.0.encoder_attn"), "encoder-decoder attention never reached SDPA"
    assert_fused_kernels_take(spy.calls)
    for call in spy.of("decoder.layers"):
        if not call["module"].endswith("self_attn"):
            continue
        mask = call["attn_mask"]
        # without a bias: no mask, is_causal (right-padded targets need none); with one: the bias
        assert (mask is None and call["is_causal"]) or (mask.is_floating_point() and not call["is_causal"])
    for side in ("encoder.layers", "encoder_attn"):
        key_masks = [call["attn_mask"] for call in spy.of(side)
                     if call["attn_mask"] is not None and call["attn_mask"].dtype == torch.bool]
        assert all(is_key_mask(mask, 3, src.size(1)) for mask in key_masks)
        assert len({id(mask) for mask in key_masks}) <= 1, "the key mask was built more than once in a pass"


@pytest.mark.parametrize("heads", [2, 4, 8])
@pytest.mark.parametrize("arch", ARCHS)
def test_every_decoding_step_takes_what_the_fused_kernels_take(arch, heads, dictionary, monkeypatch):
    """Decoding steps, the first with one query and one key, where a bias laid out heads-last
    (``B x H x 1 x 1``, the heads' stride 1) counts as channels-last."""
    model = build_tiny_model(arch, dictionary, encoder_embed_dim=8 * heads, decoder_embed_dim=8 * heads,
                             encoder_attention_heads=heads, decoder_attention_heads=heads)
    src, _, prev = padded_batch(dictionary)
    with torch.no_grad():
        encoder_out, state = encode(model, src), {}
        spy = SdpaCalls(model, monkeypatch)
        for end in range(1, 4):
            model.decoder(prev[:, :end], encoder_out, incremental_state=state)
    assert spy.of("decoder.layers.0.encoder_attn"), "no decoding step reached SDPA"
    assert_fused_kernels_take(spy.calls)


@pytest.mark.parametrize("arch", ["transformer_alibi", "transformer_t5", "transformer_abs"])
def test_masked_calls_that_need_gradients_avoid_cudnn(arch, dictionary, monkeypatch):
    """cuDNN's attention backward gives nan query gradients for masked calls over 64 mod 128
    keys on Hopper GPUs (pytorch/pytorch#196678): a masked call of a training pass runs with
    cuDNN's kernel disabled; unmasked calls, translation, and the setting afterwards keep it."""
    assert torch.backends.cuda.cudnn_sdp_enabled()
    model = build_tiny_model(arch, dictionary)
    spy = SdpaCalls(model, monkeypatch)
    src, _, prev = padded_batch(dictionary)
    model.train()(src, None, prev)[0].sum().backward()
    masked = [call for call in spy.calls if call["attn_mask"] is not None]
    assert masked, "no masked call: the sources were not padded"
    assert not any(call["cudnn"] for call in masked)
    assert all(call["cudnn"] for call in spy.calls if call["attn_mask"] is None)
    assert torch.backends.cuda.cudnn_sdp_enabled()
    spy.calls.clear()
    with torch.no_grad():
        model.eval()(src, None, prev)
    assert all(call["cudnn"] for call in spy.calls)


@pytest.mark.parametrize("arch", ["transformer_abs", "transformer_rope", "transformer_ssmax"])
def test_decoder_self_attention_without_a_bias_runs_causal_kernels_unmasked(arch, dictionary, monkeypatch):
    """A full pass over right-padded targets says is_causal and passes no mask, so that
    FlashAttention can take it; a decoding step of one token needs neither."""
    model = build_tiny_model(arch, dictionary)
    spy = SdpaCalls(model, monkeypatch)
    src, _, prev = padded_batch(dictionary)
    with torch.no_grad():
        encoder_out = encode(model, src)
        model.decoder(prev, encoder_out)
        full = [call for call in spy.of("decoder") if "self_attn" in call["module"]]
        spy.calls.clear()
        state = {}
        for end in (1, 2):
            model.decoder(prev[:, :end], encoder_out, incremental_state=state)
        steps = [call for call in spy.of("decoder") if "self_attn" in call["module"]]
    assert full and all(call["is_causal"] and call["attn_mask"] is None for call in full)
    assert steps and all(not call["is_causal"] and call["attn_mask"] is None for call in steps)


def test_sources_without_padding_need_no_mask(dictionary, monkeypatch):
    """fairseq always hands over the encoder's padding mask; where it pads nothing,
    encoder-decoder attention gets no mask, which FlashAttention takes."""
    model = build_tiny_model("transformer_abs", dictionary)
    spy = SdpaCalls(model, monkeypatch)
    src = random_tokens(dictionary, [6, 6], left_pad=True)
    prev = decoder_input(dictionary, random_tokens(dictionary, [5, 5], left_pad=False, seed=1))
    with torch.no_grad():
        model(src, None, prev)
        encoder_out, state = encode(model, src), {}
        for end in (1, 2):
            model.decoder(prev[:, :end], encoder_out, incremental_state=state)
    cross = spy.of("encoder_attn")
    assert cross and all(call["attn_mask"] is None for call in cross)


@pytest.mark.parametrize("arch", ["transformer_abs", "transformer_alibi", "transformer_rel", "transformer_rope"])
def test_padding_before_target_tokens_is_masked(arch, dictionary, monkeypatch):
    """Left-padded decoder inputs (fairseq's --left-pad-target): causality no longer hides the
    padding from real queries, so it is masked, and each sentence's outputs are its own."""
    model = build_tiny_model(arch, dictionary)
    spy = SdpaCalls(model, monkeypatch)
    src, tgt, prev = padded_batch(dictionary, target_left_pad=True)
    with torch.no_grad():
        logits, _ = model(src, None, prev)
        decoder_self = [call for call in spy.of("decoder.layers") if call["module"].endswith("self_attn")]
        for row in range(src.size(0)):
            alone_src = src[row:row + 1][:, src[row].ne(dictionary.pad())]
            alone_prev = prev[row:row + 1][:, tgt[row].ne(dictionary.pad())]
            alone, _ = model(alone_src, None, alone_prev)
            torch.testing.assert_close(logits[row, -alone_prev.size(1):], alone[0], atol=1e-5, rtol=1e-4)
    assert all(not call["is_causal"] and call["attn_mask"] is not None for call in decoder_self)


class TensorsOfSize(TorchDispatchMode):
    """Counts the tensors of a given size (and dtype, if given) that operations write into
    storage of their own (views and in-place results write into their input's)."""

    def __init__(self, numel, dtype=None):
        super().__init__()
        self.numel, self.dtype, self.count = numel, dtype, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        inputs = {t.untyped_storage().data_ptr() for t in tree_flatten((args, kwargs))[0]
                  if isinstance(t, torch.Tensor)}
        out = func(*args, **(kwargs or {}))
        self.count += sum(1 for t in tree_flatten(out)[0]
                          if isinstance(t, torch.Tensor) and t.numel() == self.numel and self.dtype in (None, t.dtype)
                          and t.untyped_storage().data_ptr() not in inputs)
        return out


@pytest.mark.parametrize("spec, copies", [("none", 0), ("t5", 0), ("t5+ssmax", 1)])
def test_the_explicit_path_writes_the_logits_terms_into_one_tensor(spec, copies):
    """The logits (B x H x Tq x Tk) take the bias and the mask in place, and the softmax reads
    them in float32 straight from them (on a GPU, half-precision logits give one float32
    copy, the softmax's output: tests/plugin/test_gpu.py): no other tensor of their size but a
    scale's product, which its gradient needs besides the logits before it."""
    torch.manual_seed(0)
    context = StackContext(embed_dim=32, num_heads=4, num_layers=1, causal=True, max_positions=64)
    positions = PositionSpec.parse(spec).build_attention_layers(context)[0]
    attention = RelPosSelfAttention(32, 4, positions=positions, causal=True).eval()
    x = torch.randn(11, 3, 32)
    padding = torch.zeros(3, 11, dtype=torch.bool)
    padding[1, :4] = True  # padding before tokens: the mask is applied
    with torch.no_grad(), TensorsOfSize(numel=3 * 4 * 11 * 11) as counter:
        _, weights = attention(x, padding, need_weights=True)
    assert counter.count == 2 + copies  # the logits, the softmax's output
    assert weights.isfinite().all()  # padded queries see the padding before them


def test_kernels_are_recorded_per_module(dictionary):
    """What the benchmark reports: the kernel of every attention call."""
    model = build_tiny_model("transformer_huang2", dictionary)
    src, _, prev = padded_batch(dictionary)
    with torch.no_grad(), recorded_kernels() as kernels:
        model(src, None, prev)
    by_module = {module: kernel for module, kernel in kernels}
    layer = model.decoder.layers[0]
    assert by_module[layer.self_attn] == "explicit"  # a multiplicative scheme
    assert by_module[layer.encoder_attn] == "flash_attention"  # the CPU's fused kernel
    assert by_module[model.decoder.layers[1].encoder_attn] == "explicit"  # the alignment layer's weights
    with torch.no_grad():
        model(src, None, prev)
    assert len(kernels) == 6  # one pass: nothing recorded once closed


@pytest.mark.parametrize("source_dim", [32, 24])
def test_encoder_decoder_attention_is_fairseqs_multihead_attention_on_sdpa(source_dim):
    """Under one seed it starts with fairseq's parameters (names and values, so checkpoints of
    either load into the other), and computes fairseq's outputs and weights, in a full pass
    over left-padded sources and step by step."""
    torch.manual_seed(0)
    theirs = MultiheadAttention(32, 4, kdim=source_dim, vdim=source_dim, dropout=0.0,
                                encoder_decoder_attention=True).eval()
    torch.manual_seed(0)
    ours = RelPosCrossAttention(32, 4, kdim=source_dim).eval()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert all(torch.equal(ours.state_dict()[name], value) for name, value in theirs.state_dict().items())
    padding = torch.tensor([[False] * 7, [True] * 4 + [False] * 3])  # left-padded sources
    source, target = torch.randn(7, 2, source_dim), torch.randn(5, 2, 32)
    with torch.no_grad():
        for head_weights in (False, True):
            expected = theirs(target, source, source, padding, static_kv=True, need_weights=True,
                              need_head_weights=head_weights)
            actual = ours(target, source, source, padding, need_weights=True, need_head_weights=head_weights)
            for mine, fairseqs in zip(actual, expected):
                torch.testing.assert_close(mine, fairseqs, atol=1e-6, rtol=1e-5)
        ours_state, theirs_state = {}, {}
        for step in range(5):
            query = target[step:step + 1]
            expected, _ = theirs(query, source, source, padding, incremental_state=theirs_state, static_kv=True)
            actual, _ = ours(query, source, source, padding, incremental_state=ours_state)
            torch.testing.assert_close(actual, expected, atol=1e-6, rtol=1e-5)
