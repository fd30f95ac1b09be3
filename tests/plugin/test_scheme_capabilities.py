"""What the attention module knows of a scheme (its capabilities: ``transforms_logits``,
``has_value_term``, ``flex_covered``) follows from the methods the scheme's class overrides,
for a chain of schemes from its members; a class whose flags say otherwise is refused."""
import pytest
import torch

from fairseq_relpos.modules.attention import RelPosSelfAttention, recorded_kernels
from fairseq_relpos.positions import AttentionScheme, InputScheme, PositionSpec, register_scheme
from fairseq_relpos.positions.base import NoSettings, StackContext

EMBED_DIM, HEADS = 16, 2
CONTEXT = StackContext(embed_dim=EMBED_DIM, num_heads=HEADS, num_layers=1, causal=False, max_positions=20)


class UniformAttention(AttentionScheme):
    """Sets every content logit to 0, and says nothing of it: every query then averages the
    values."""

    def transform_logits(self, logits, q, k, span):
        return logits * 0


def test_a_scheme_that_transforms_the_logits_has_its_transform_applied_without_saying_so():
    assert UniformAttention.transforms_logits and not UniformAttention.flex_covered
    torch.manual_seed(0)
    attention = RelPosSelfAttention(EMBED_DIM, HEADS, positions=UniformAttention(NoSettings(), CONTEXT)).eval()
    x = torch.randn(5, 2, EMBED_DIM)  # T x B x C
    with torch.no_grad(), recorded_kernels() as kernels:
        out, _ = attention(x)
    values = attention._split_heads(attention.v_proj(x))  # B x H x T x dh
    expected = attention._merge_heads(values.mean(dim=2, keepdim=True).expand_as(values))
    assert [kernel for _, kernel in kernels] == ["explicit"]
    torch.testing.assert_close(out, expected)


class Bias(AttentionScheme):
    def logit_bias(self, q, k, span):
        return None


class KernelBias(Bias):
    def flex_bias(self, q, k, span):
        return None


class KernelFactor(AttentionScheme):
    def transform_logits(self, logits, q, k, span):
        return logits

    def flex_factor(self, span):
        return None


class ValueTerm(KernelBias):
    def value_term(self, probs, span):
        return None


class Rotation(AttentionScheme):
    def rotate(self, x, span):
        return x


@pytest.mark.parametrize("scheme, transforms_logits, has_value_term, flex_covered", [
    (Bias, False, False, False),  # a bias FlexAttention has no form of
    (KernelBias, False, False, True),
    (UniformAttention, True, False, False),
    (KernelFactor, True, False, True),
    (ValueTerm, False, True, False),  # no kernel adds a value term
    (Rotation, False, False, True),  # before any kernel
])
def test_a_schemes_capabilities_are_the_methods_it_overrides(scheme, transforms_logits, has_value_term,
                                                              flex_covered):
    assert (scheme.transforms_logits, scheme.has_value_term, scheme.flex_covered) == (
        transforms_logits, has_value_term, flex_covered)


@pytest.mark.parametrize("spec, transforms_logits, has_value_term, flex_covered", [
    ("rope+huang1", True, False, True),
    ("t5+shaw", False, True, False),
    ("rope+alibi", False, False, True),
    ("alibi+huang3", True, False, False),
])
def test_a_chain_can_what_its_members_can(spec, transforms_logits, has_value_term, flex_covered):
    chain = PositionSpec.parse(spec).build_attention_layers(CONTEXT)[0]
    assert (chain.transforms_logits, chain.has_value_term, chain.flex_covered) == (
        transforms_logits, has_value_term, flex_covered)


def test_shaws_schemes_have_the_terms_their_tables_give():
    layers = {name: PositionSpec.parse(name).build_attention_layers(CONTEXT)[0]
              for name in ("shaw", "shaw_k", "shaw_v")}
    assert {name: (scheme.key_table is not None, scheme.value_table is not None, scheme.has_value_term,
                   scheme.flex_covered) for name, scheme in layers.items()} == {
        "shaw": (True, True, True, False), "shaw_k": (True, False, False, True), "shaw_v": (False, True, True, False)}


def test_a_flag_that_disagrees_with_the_methods_is_refused_naming_the_class():
    with pytest.raises(TypeError, match=r"ForgetfulTransform sets transforms_logits = False, but it overrides "
                                        r"transform_logits.*remove it"):
        class ForgetfulTransform(AttentionScheme):
            transforms_logits = False

            def transform_logits(self, logits, q, k, span):
                return logits

    with pytest.raises(TypeError, match="BoastfulBias sets flex_covered = True, but it overrides logit_bias without "
                                        "flex_bias"):
        class BoastfulBias(AttentionScheme):
            flex_covered = True

            def logit_bias(self, q, k, span):
                return None

    with pytest.raises(TypeError, match="Valueless sets has_value_term = True, but it does not override value_term"):
        class Valueless(AttentionScheme):
            has_value_term = True


def test_a_kernel_term_without_its_reference_term_is_refused():
    with pytest.raises(TypeError, match="KernelOnly overrides flex_bias but not logit_bias"):
        class KernelOnly(AttentionScheme):
            def flex_bias(self, q, k, span):
                return None


def test_only_an_attention_scheme_may_serve_encoder_decoder_attention():
    class AcrossInput(InputScheme):
        applies_across = True

    with pytest.raises(TypeError, match="AcrossInput sets applies_across, which only an AttentionScheme can"):
        register_scheme("across_input_test")(AcrossInput)
