"""Invariant 1 (docs/positions.md): every scheme equals a loop-by-the-equation reference, with
padding, alone and in combination; and the spec language that names them.

Each registered scheme must have a reference here; a new scheme without one fails
`test_every_scheme_has_a_reference`.  A reference says, for one head and one (query, key)
pair, how the scheme rotates a vector, transforms the content logit, biases it, or adds to
the value; the generic loop below runs the attention equation around them.
"""
import math

import pytest
import torch

from fairseq_relpos.modules.attention import RelPosSelfAttention
from fairseq_relpos.positions import SCHEMES, AttentionScheme, InputScheme, PositionSpec, scheme_names
from fairseq_relpos.positions.base import Positions, StackContext

EMBED_DIM, HEADS, MAX_POSITIONS = 16, 2, 16
HEAD_DIM = EMBED_DIM // HEADS
ATOL = 1e-5


def context(causal, num_layers=1, max_positions=MAX_POSITIONS, heads=HEADS):
    return StackContext(embed_dim=EMBED_DIM, num_heads=heads, num_layers=num_layers, causal=causal,
                        max_positions=max_positions)


def build(spec, causal, **context_options):
    return PositionSpec.parse(spec).build_attention_layers(context(causal, **context_options))[0]


def left_padding_mask(lengths, total):
    return torch.tensor([[position < total - length for position in range(total)] for length in lengths])


def right_padding_mask(lengths, total):
    return torch.tensor([[position >= length for position in range(total)] for length in lengths])


# --- references, straight from the equations (docs/positions.md) ------------------------
def reference_sinusoid(position, dim, spectrum_dim=None):
    spectrum_dim = spectrum_dim or dim
    return torch.tensor([
        math.sin(position / 10000 ** (2 * (i // 2) / spectrum_dim)) if i % 2 == 0
        else math.cos(position / 10000 ** (2 * (i // 2) / spectrum_dim))
        for i in range(dim)
    ])


def add_per_position(x, padding_mask, vector_at):
    """x plus vector_at(p) at each token, p counting the row's tokens from 0."""
    out = x.clone()
    for b in range(x.size(0)):
        position = 0
        for t in range(x.size(1)):
            if not padding_mask[b, t]:
                out[b, t] += vector_at(position)
                position += 1
    return out


def reference_input_abs(scheme, x, padding_mask):
    return add_per_position(x, padding_mask, lambda p: reference_sinusoid(p, x.size(2)))


def reference_input_abs_learned(scheme, x, padding_mask):
    return add_per_position(x, padding_mask, lambda p: scheme.table.weight[p])


def reference_input_lstm(scheme, x, padding_mask):
    out = torch.zeros_like(x)
    for b in range(x.size(0)):
        tokens = (~padding_mask[b]).nonzero().squeeze(1)
        out[b, tokens] = scheme.lstm(x[b, tokens].unsqueeze(0))[0].squeeze(0)  # one unpadded sentence
    return out


def table_row(table, h, row):
    """Row ``row`` of a table shared by the heads (R x …) or one per head (H x R x …)."""
    return table[row] if table.dim() == 2 else table[h, row]


def clip(scheme, r):
    return max(-scheme.settings.k, min(scheme.settings.k, r))


def shaw_vectors(scheme, h, r):
    """w^K and w^V at signed distance r, or None where the scheme has none."""
    if scheme.name == "shaw_sin":
        vector = reference_sinusoid(clip(scheme, r), HEAD_DIM, EMBED_DIM)
        return vector, vector
    row = clip(scheme, r) + scheme.settings.k
    return [None if table is None else table_row(table, h, row) for table in (scheme.key_table, scheme.value_table)]


def shaw_bias(scheme, q, k, i, j, h, pi, pj):
    key_vector = shaw_vectors(scheme, h, j - i)[0]
    return 0.0 if key_vector is None else float(q @ key_vector) / math.sqrt(HEAD_DIM)


def shaw_value(scheme, i, j, h):
    value_vector = shaw_vectors(scheme, h, j - i)[1]
    return 0.0 if value_vector is None else value_vector


def t5_bucket(scheme, r):
    """Raffel et al.'s bucket of the distance r = j - i, one scalar at a time."""
    buckets, offset = scheme.settings.buckets, 0
    if scheme.context.causal:
        n = max(-r, 0)
    else:
        buckets //= 2
        offset, n = (buckets if r > 0 else 0), abs(r)
    exact = buckets // 2
    if n < exact:
        return offset + n
    large = exact + int(torch.log(torch.tensor(n / exact, dtype=torch.float32))
                        / math.log(scheme.settings.max_distance / exact) * (buckets - exact))
    return offset + min(large, buckets - 1)


def t5_bias(scheme, q, k, i, j, h, pi, pj):
    return float(scheme.table[t5_bucket(scheme, j - i), head_of(scheme.table.t(), h)])


def alibi_bias(scheme, q, k, i, j, h, pi, pj):
    if scheme.settings == type(scheme.settings)() and not scheme.context.cross:
        slope = 2 ** (-8 * (h + 1) / HEADS)  # Press et al., for a power-of-two number of heads
        return -slope * abs(j - i)
    # Marian's: -|m_h|·|j - i + b_h| with the scheme's (trained) slopes and offsets
    offset = 0.0 if scheme.offsets is None else float(scheme.offsets[h])
    return -abs(float(scheme.slopes[h])) * abs(j - i + offset)


def rope_angle(settings, m):
    """θ_m of rope's settings: base^(-2m/d), scaled as Chen et al. (pi), the NTK-aware base
    (ntk) or Peng et al.'s YaRN (yarn) say; and YaRN's factor on queries and keys."""
    d, factor = HEAD_DIM, settings.factor
    if settings.scaling == "ntk":
        return (settings.base * factor ** (d / (d - 2))) ** (-2 * m / d), 1.0
    theta = settings.base ** (-2 * m / d)
    if settings.scaling == "pi":
        return theta / factor, 1.0
    if settings.scaling == "yarn":
        def dimension_turning(turns):  # Peng et al. eq. 18-19: r(d) = L / λ_d
            return d * math.log(settings.original / (2 * math.pi * turns)) / (2 * math.log(settings.base))

        low, high = max(math.floor(dimension_turning(32)), 0), min(math.ceil(dimension_turning(1)), d - 1)
        ramp = min(max((m - low) / (high - low), 0.0), 1.0)  # 0: keep the frequency, 1: interpolate it
        return (1 - ramp) * theta + ramp * theta / factor, 0.1 * math.log(factor) + 1
    return theta, 1.0


def rope_rotate(scheme, vector, position):
    half = HEAD_DIM // 2
    out = vector.clone()
    for m in range(half):
        theta, scale = rope_angle(scheme.settings, m)
        angle = position * theta
        first, second = float(vector[m]), float(vector[m + half])
        out[m] = scale * (first * math.cos(angle) - second * math.sin(angle))
        out[m + half] = scale * (second * math.cos(angle) + first * math.sin(angle))
    return out


def xl_bias(scheme, q, k, i, j, h, pi, pj):
    projected = scheme.position_proj(reference_sinusoid(i - j, EMBED_DIM)).view(HEADS, HEAD_DIM)[h]  # W_R R_{i-j}
    u, v = (scheme.content_bias[h, 0], scheme.position_bias[h, 0]) if scheme.settings.biases else (0 * q, 0 * q)
    return (float(u @ k) + float((q + v) @ projected)) / math.sqrt(HEAD_DIM)


def distance_row(scheme, r, unsigned=False):
    reach = scheme.settings.clip if scheme.settings.clip is not None else MAX_POSITIONS - 1
    clipped = max(-reach, min(reach, r))
    return abs(clipped) if unsigned else clipped + reach


def head_of(table, h):
    return h if table.size(0) > 1 else 0


def rel_scalar_bias(scheme, q, k, i, j, h, pi, pj):
    return float(scheme.table[distance_row(scheme, j - i), head_of(scheme.table.t(), h)])


def abs_scalar_bias(scheme, q, k, i, j, h, pi, pj):
    table = scheme.table[head_of(scheme.table, h)]
    return float(table[pi] @ table[pj])


def huang_scalar_transform(unsigned):
    def transform(scheme, e, q, k, i, j, h):
        return e * float(scheme.table[head_of(scheme.table, h), distance_row(scheme, j - i, unsigned)])
    return transform


def huang3_transform(scheme, e, q, k, i, j, h):
    gate = scheme.table[head_of(scheme.table, h), distance_row(scheme, j - i)]
    return float((q * k * gate).sum()) / math.sqrt(HEAD_DIM)


def huang4_bias(scheme, q, k, i, j, h, pi, pj):
    a = scheme.table[head_of(scheme.table, h), distance_row(scheme, j - i)]
    return (float(q @ a) + float(k @ a)) / math.sqrt(HEAD_DIM)


INPUT_REFERENCES = {
    "abs": reference_input_abs,
    "abs_learned": reference_input_abs_learned,
    "lstm": reference_input_lstm,
}
ATTENTION_REFERENCES = {
    "shaw": dict(bias=shaw_bias, value=shaw_value),
    "shaw_k": dict(bias=shaw_bias),
    "shaw_v": dict(value=shaw_value),
    "shaw_sin": dict(bias=shaw_bias, value=shaw_value),
    "t5": dict(bias=t5_bias),
    "alibi": dict(bias=alibi_bias),
    "rope": dict(rotate=rope_rotate),
    "xl": dict(bias=xl_bias),
    "rel_scalar": dict(bias=rel_scalar_bias),
    "abs_scalar": dict(bias=abs_scalar_bias),
    "huang1": dict(transform=huang_scalar_transform(unsigned=True)),
    "huang2": dict(transform=huang_scalar_transform(unsigned=False)),
    "huang3": dict(transform=huang3_transform),
    "huang4": dict(bias=huang4_bias),
}


def schemes_of(positions):
    if positions is None:
        return []
    return list(positions.schemes.values()) if hasattr(positions, "schemes") else [positions]


def reference_attention(attention, x, key_padding_mask, columns=None):
    """The attention equation, one head and one (query, key) pair at a time; column ``c``
    sits at position ``columns[c]`` (default ``c``), a row's first real token at ``columns[0]``."""
    length, bsz, _ = x.shape
    columns = list(range(length)) if columns is None else [int(p) for p in columns]
    heads = lambda proj: proj(x).view(length, bsz, HEADS, HEAD_DIM)  # noqa: E731
    q, k, v = heads(attention.q_proj), heads(attention.k_proj), heads(attention.v_proj)
    parts = [(scheme, ATTENTION_REFERENCES[scheme.name]) for scheme in schemes_of(attention.positions)]
    z = torch.zeros(length, bsz, HEADS, HEAD_DIM)
    for b in range(bsz):
        first = int((~key_padding_mask[b]).long().argmax())
        token_position = [p - columns[first] + columns[0] for p in columns]  # the row's real tokens from columns[0]
        for h in range(HEADS):
            def rotated(vector, position):
                for scheme, reference in parts:
                    vector = reference.get("rotate", lambda s, vec, p: vec)(scheme, vector, position)
                return vector

            for i in range(length):
                logits = []
                p_i = columns[i]
                q_i = rotated(q[i, b, h], p_i)
                for j in range(length):
                    if key_padding_mask[b, j] or (attention.causal and j > i):
                        logits.append(float("-inf"))
                        continue
                    p_j = columns[j]
                    k_j = rotated(k[j, b, h], p_j)
                    e = float(q_i @ k_j) / math.sqrt(HEAD_DIM)
                    for scheme, reference in parts:  # transforms first, then biases, as documented
                        if "transform" in reference:
                            e = reference["transform"](scheme, e, q_i, k_j, p_i, p_j, h)
                    for scheme, reference in parts:
                        if "bias" in reference:
                            e += reference["bias"](scheme, q_i, k_j, p_i, p_j, h, token_position[i], token_position[j])
                    logits.append(e)
                alpha = torch.softmax(torch.tensor(logits), dim=0)
                for j in range(length):
                    if alpha[j] > 0:
                        value = v[j, b, h]
                        for scheme, reference in parts:
                            if "value" in reference:
                                value = value + reference["value"](scheme, p_i, columns[j], h)
                        z[i, b, h] += alpha[j] * value
    return attention.out_proj(z.reshape(length, bsz, EMBED_DIM))


# every scheme with its defaults, then settings and combinations
ATTENTION_SPECS = sorted(name for name, cls in SCHEMES.items() if issubclass(cls, AttentionScheme)) + [
    "shaw:k=2,heads=separate", "shaw_v:k=5", "t5:buckets=8,max_distance=12", "t5:heads=shared,layers=separate",
    "rel_scalar:clip=3", "rel_scalar:heads=shared", "abs_scalar:heads=shared", "huang1:clip=2",
    "huang2:clip=3,heads=shared", "huang3:clip=4", "huang4:clip=2", "xl:biases=false", "rope:base=100",
    "rope+alibi", "shaw_k+t5", "abs_scalar+shaw+rel_scalar", "rope+huang2+shaw_v", "t5+huang1",
    "rope:scaling=pi,factor=4", "rope:scaling=ntk,factor=4", "rope:base=100,scaling=yarn,factor=4,original=64",
    "alibi:trainable=true", "alibi:slope=0.5,offset=1.5", "alibi:trainable=true,slope=0.1,offset=0.3",
]


def test_every_scheme_has_a_reference():
    assert {n for n, c in SCHEMES.items() if issubclass(c, InputScheme)} == set(INPUT_REFERENCES)
    assert {n for n, c in SCHEMES.items() if issubclass(c, AttentionScheme)} == set(ATTENTION_REFERENCES)


@pytest.mark.parametrize("causal", [False, True], ids=["encoder", "decoder"])
@pytest.mark.parametrize("name", sorted(INPUT_REFERENCES))
def test_input_scheme_equals_reference(name, causal):
    torch.manual_seed(0)
    scheme = PositionSpec.parse(name).build_input(context(causal)).eval()
    lengths, total = [7, 4, 1], 7
    padding_mask = (right_padding_mask if causal else left_padding_mask)(lengths, total)
    x = torch.randn(len(lengths), total, EMBED_DIM)
    with torch.no_grad():
        expected = INPUT_REFERENCES[name](scheme, x, padding_mask)
        actual = scheme(x, padding_mask)
    tokens = ~padding_mask
    torch.testing.assert_close(actual[tokens], expected[tokens], atol=ATOL, rtol=1e-4)


@pytest.mark.parametrize("causal", [False, True], ids=["encoder", "decoder"])
@pytest.mark.parametrize("spec", ATTENTION_SPECS + ["none"])
def test_self_attention_equals_reference(spec, causal):
    torch.manual_seed(0)
    positions = build(spec, causal)
    for table in positions.parameters() if positions is not None else []:
        torch.nn.init.normal_(table)  # make the position terms count
    attention = RelPosSelfAttention(EMBED_DIM, HEADS, positions=positions, causal=causal).eval()
    lengths, total = [9, 5, 2], 9  # longer than the clipping distances, so clipping happens
    padding_mask = (right_padding_mask if causal else left_padding_mask)(lengths, total)
    x = torch.randn(total, len(lengths), EMBED_DIM)
    with torch.no_grad():
        expected = reference_attention(attention, x, padding_mask)
        actual, _ = attention(x, padding_mask)
        with_weights, weights = attention(x, padding_mask, need_weights=True)
    tokens = ~padding_mask.t()  # T x B
    torch.testing.assert_close(actual[tokens], expected[tokens], atol=ATOL, rtol=1e-4)
    torch.testing.assert_close(with_weights, actual, atol=ATOL, rtol=1e-4)  # fused = explicit path
    assert torch.allclose(weights.sum(-1), torch.ones(()))


#: positions drawn as randomized positions draw them (Ruoss et al. 2023): sorted, distinct,
#: within the tables of MAX_POSITIONS
DRAWN_COLUMNS = torch.tensor([0, 2, 3, 5, 8, 9, 11, 14, 15])


@pytest.mark.parametrize("causal", [False, True], ids=["encoder", "decoder"])
@pytest.mark.parametrize("spec", ATTENTION_SPECS)
def test_every_scheme_reads_the_positions_it_is_given(spec, causal):
    """Positions are an input: at positions 0, 2, 3, 5, … every scheme computes its equation
    with those positions and their differences."""
    torch.manual_seed(0)
    positions = build(spec, causal)
    for table in positions.parameters():
        torch.nn.init.normal_(table)
    attention = RelPosSelfAttention(EMBED_DIM, HEADS, positions=positions, causal=causal).eval()
    lengths, total = [9, 5, 2], 9
    padding_mask = (right_padding_mask if causal else left_padding_mask)(lengths, total)
    x = torch.randn(total, len(lengths), EMBED_DIM)
    with torch.no_grad():
        expected = reference_attention(attention, x, padding_mask, DRAWN_COLUMNS)
        actual, _ = attention(x, padding_mask, key_positions=Positions.of_batch(DRAWN_COLUMNS, padding_mask, None))
    tokens = ~padding_mask.t()  # T x B
    torch.testing.assert_close(actual[tokens], expected[tokens], atol=ATOL, rtol=1e-4)


@pytest.mark.parametrize("name", ["abs", "abs_learned"])
def test_input_schemes_read_the_positions_they_are_given(name):
    torch.manual_seed(0)
    scheme = PositionSpec.parse(name).build_input(context(False)).eval()
    padding_mask = left_padding_mask([9, 5, 2], 9)
    rows = Positions.of_batch(DRAWN_COLUMNS, padding_mask, torch.tensor([[0], [3], [1]])).rows()  # B x T
    x = torch.randn(3, 9, EMBED_DIM)
    vector_at = (lambda p: reference_sinusoid(p, EMBED_DIM)) if name == "abs" else (lambda p: scheme.table.weight[p])
    with torch.no_grad():
        actual = scheme(x, padding_mask, rows)
        for b, t in (~padding_mask).nonzero().tolist():
            first = int(padding_mask[b].sum())
            position = int(DRAWN_COLUMNS[t] - DRAWN_COLUMNS[first]) + [0, 3, 1][b]  # from columns[0] = 0
            torch.testing.assert_close(actual[b, t], x[b, t] + vector_at(position), atol=ATOL, rtol=1e-4)


def test_shape_shifts_each_sequence_by_its_own_offset():
    """SHAPE (Kiyono et al. 2021): while training, a random offset in 0…K per sequence;
    ``abs:shift=K``, as the first releases spelt it, is ``rand:shift=K``
    (tests/test_explicit_positions.py: only in training, read by every scheme)."""
    spec = PositionSpec.parse("abs:shift=50")
    assert str(spec) == "abs+rand:shift=50" and str(PositionSpec.parse("abs:shift=0")) == "abs"
    torch.manual_seed(0)
    rows = spec.build_training_positions(context(False)).positions(torch.zeros(64, 5, dtype=torch.bool)).rows()
    offsets = rows[:, :1]  # 64 x 1
    assert len(set(offsets.flatten().tolist())) > 20 and 0 <= offsets.min() and offsets.max() <= 50
    assert torch.equal(rows - offsets, torch.arange(5).expand(64, 5))  # consecutive from the offset


def test_t5_buckets_are_t5s():
    """Spot values of T5's bucketing (32 buckets, max distance 128), distance = key - query."""
    encoder, decoder = build("t5", causal=False), build("t5", causal=True)
    distances = torch.tensor([0, 1, -1, 7, -7, -8, -16, 16, -127, -128, -1000, 1000])
    assert encoder.bucket(distances).tolist() == [0, 17, 1, 23, 7, 8, 10, 26, 15, 15, 15, 31]
    distances = torch.tensor([0, -1, -15, -16, -32, -127, -1000, 5])
    assert decoder.bucket(distances).tolist() == [0, 1, 15, 16, 21, 31, 31, 0]


def test_alibi_slopes_for_any_number_of_heads():
    """Press et al.: geometric for a power of two, else interleaved from the next power."""
    from fairseq_relpos.positions.alibi import alibi_slopes

    assert alibi_slopes(8) == [2 ** -(h + 1) for h in range(8)]
    assert alibi_slopes(6) == [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3]


@pytest.mark.parametrize("spec, causal, rows", [
    ("shaw:k=3", False, 2 * (7 * HEAD_DIM)), ("shaw:k=3", True, 2 * (4 * HEAD_DIM)),
    ("shaw:k=3,heads=separate", False, 2 * HEADS * 7 * HEAD_DIM), ("shaw_k:k=3", True, 4 * HEAD_DIM),
    ("shaw_sin", False, 0), ("t5", False, 32 * HEADS), ("t5:heads=shared", True, 32), ("alibi", False, 0),
    ("rope", False, 0), ("xl", False, EMBED_DIM ** 2 + 2 * EMBED_DIM), ("xl:biases=false", True, EMBED_DIM ** 2),
    ("rel_scalar", False, HEADS * (2 * MAX_POSITIONS - 1)), ("rel_scalar:clip=3", True, HEADS * 4),
    ("abs_scalar", False, HEADS * MAX_POSITIONS * HEAD_DIM), ("huang1", False, HEADS * MAX_POSITIONS),
    ("huang1", True, HEADS * MAX_POSITIONS), ("huang2", False, HEADS * (2 * MAX_POSITIONS - 1)),
    ("huang2", True, HEADS * MAX_POSITIONS), ("huang3:clip=2", False, HEADS * 5 * HEAD_DIM),
    ("huang4:heads=shared", True, MAX_POSITIONS * HEAD_DIM),
])
def test_parameters_per_layer(spec, causal, rows):
    """Each scheme's parameters in one layer, as docs/positions.md counts them."""
    assert sum(p.numel() for p in build(spec, causal).parameters()) == rows


@pytest.mark.parametrize("spec, separate_tables", [
    ("shaw", 3), ("shaw:layers=shared", 1), ("t5", 1), ("t5:layers=separate", 3), ("rel_scalar", 3),
    ("huang4:layers=shared", 1), ("abs_scalar", 3),
])
def test_sharing_across_layers_is_a_setting(spec, separate_tables):
    layers = PositionSpec.parse(spec).build_attention_layers(context(False, num_layers=3))
    assert len({id(p) for layer in layers for p in layer.parameters()}) == separate_tables * len(
        list(layers[0].parameters()))


@pytest.mark.parametrize("spec, expected", [
    ("none", ()), ("abs", ("abs",)), ("shaw", ("shaw",)), ("abs+shaw", ("abs", "shaw")),
    ("shaw_k + lstm", ("shaw_k", "lstm")), ("rope+alibi", ("rope", "alibi")),
    ("abs+shaw_k+t5", ("abs", "shaw_k", "t5")), ("t5:buckets=16,max_distance=64", ("t5",)),
])
def test_position_spec_parse(spec, expected):
    assert tuple(name for name, _ in PositionSpec.parse(spec).schemes) == expected


def test_settings_come_from_the_spec_and_print_back():
    spec = PositionSpec.parse("shaw:k=8+t5:buckets=16,max_distance=64+rope:base=500")
    settings = dict(spec.schemes)
    assert (settings["shaw"].k, settings["t5"].buckets, settings["t5"].max_distance) == (8, 16, 64)
    assert settings["rope"].base == 500.0
    assert str(spec) == "shaw:k=8+t5:buckets=16,max_distance=64+rope:base=500.0"
    assert str(PositionSpec.parse(str(spec))) == str(spec)


def test_legacy_max_relative_position_is_the_default_k():
    assert dict(PositionSpec.parse("abs+shaw", legacy_defaults={"k": 8}).schemes)["shaw"].k == 8
    assert dict(PositionSpec.parse("shaw:k=4", legacy_defaults={"k": 8}).schemes)["shaw"].k == 4
    assert dict(PositionSpec.parse("shaw").schemes)["shaw"].k == 16


@pytest.mark.parametrize("spec, message", [
    ("abs+lstm", "both are input schemes"), ("shaw+shaw_k", "both are Shaw schemes"),
    ("huang1+huang3", "multiplicative"), ("rope+rope", "cannot be combined"), ("", "empty position spec"),
    ("none+abs", "unknown position scheme 'none'"), ("bogus", "unknown position scheme 'bogus'"),
    ("shaw:q=3", r"shaw has no setting 'q=3'; it takes k=16, heads=shared, layers=separate"),
    ("shaw:k", "shaw has no setting 'k'"), ("shaw:k=0", "must be >= 1"), ("shaw:k=x", "is not a int"),
    ("t5:heads=both", "expected one of separate, shared"), ("xl:biases=maybe", "true or false"),
    ("huang2:clip=0", "clip must be >= 1 or none"), ("lstm:hidden=1", "it takes no settings"),
    ("abs:shift=-1", "shift must be >= 0"), ("t5:buckets=7", "even number"),
    ("alibi:slope=0", "slope must be a finite number > 0"), ("alibi:offset=nan", "offset must be a finite"),
    ("rand", "rand needs max=N .* or shift=K"), ("rand:max=0", "max must be >= 1"),
    ("lstm+rand:max=64", r"rand in 'lstm\+rand:max=64' changes nothing"), ("rand:max=9+rand:shift=1", "cannot be combined"),
    ("abs:shift=5+rand:max=64", "shift=5 in .* is rand's setting, and rand is there too"),
    ("rope:scaling=pi", "go together"), ("rope:factor=2", "go together"), ("rope:factor=0.5", "factor must be"),
    ("rope:scaling=yarn,factor=2", "yarn needs it"), ("rope:scaling=ntk,factor=2,original=64", "yarn's setting"),
    ("rope:scaling=yarn,factor=2,original=0", "original must be >= 1"), ("rope:scaling=linear", "expected one of"),
    ("rope:base=nan", "base must be a finite number > 1"),
])
def test_position_spec_refuses_naming_the_option_and_what_is_allowed(spec, message):
    with pytest.raises(ValueError, match="--encoder-pos") as refused:
        PositionSpec.parse(spec, "--encoder-pos")
    assert refused.match(message)


def test_every_scheme_name_is_listed():
    assert set(scheme_names()) == {"none"} | set(SCHEMES)


def test_a_pass_shares_what_it_builds_and_forgets_it_afterwards():
    """A distance index built under inference_mode must not leak into a later training pass
    (it once did through a process-wide cache)."""
    torch.manual_seed(0)
    attention = RelPosSelfAttention(EMBED_DIM, HEADS, positions=build("shaw", False))
    x = torch.randn(6, 2, EMBED_DIM)
    with torch.inference_mode(), attention.memo.open():
        attention(x)
    with attention.memo.open():
        out, _ = attention(x.clone().requires_grad_())
    out.sum().backward()
    assert attention.positions.key_table.grad is not None
