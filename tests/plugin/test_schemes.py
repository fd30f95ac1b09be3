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
from fairseq_relpos.positions.base import AttentionSpan, PassMemo, Positions, StackContext
from fairseq_relpos.positions.fire import FIRE
from fairseq_relpos.positions.huang import HuangMethod3

EMBED_DIM, HEADS, MAX_POSITIONS = 16, 2, 20  # 20 positions: room for Shaw's default k = 16
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


def shaw_bias(scheme, q, k, i, j, h, pi, pj, last):
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


def t5_bias(scheme, q, k, i, j, h, pi, pj, last):
    return float(scheme.table[t5_bucket(scheme, j - i), head_of(scheme.table.t(), h)])


def alibi_bias(scheme, q, k, i, j, h, pi, pj, last):
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


def xl_bias(scheme, q, k, i, j, h, pi, pj, last):
    projected = scheme.position_proj(reference_sinusoid(i - j, EMBED_DIM)).view(HEADS, HEAD_DIM)[h]  # W_R R_{i-j}
    u, v = (scheme.content_bias[h, 0], scheme.position_bias[h, 0]) if scheme.settings.biases else (0 * q, 0 * q)
    return (float(u @ k) + float((q + v) @ projected)) / math.sqrt(HEAD_DIM)


def distance_row(scheme, r, unsigned=False):
    reach = scheme.settings.clip if scheme.settings.clip is not None else MAX_POSITIONS - 1
    clipped = max(-reach, min(reach, r))
    return abs(clipped) if unsigned else clipped + reach


def head_of(table, h):
    return h if table.size(0) > 1 else 0


def rel_scalar_bias(scheme, q, k, i, j, h, pi, pj, last):
    return float(scheme.table[distance_row(scheme, j - i), head_of(scheme.table.t(), h)])


def abs_scalar_bias(scheme, q, k, i, j, h, pi, pj, last):
    table = scheme.table[head_of(scheme.table, h)]
    return float(table[pi] @ table[pj])


def huang_scalar_transform(unsigned):
    def transform(scheme, e, q, k, i, j, h):
        return e * float(scheme.table[head_of(scheme.table, h), distance_row(scheme, j - i, unsigned)])
    return transform


def huang3_transform(scheme, e, q, k, i, j, h):
    gate = scheme.table[head_of(scheme.table, h), distance_row(scheme, j - i)]
    return float((q * k * gate).sum()) / math.sqrt(HEAD_DIM)


def huang4_bias(scheme, q, k, i, j, h, pi, pj, last):
    a = scheme.table[head_of(scheme.table, h), distance_row(scheme, j - i)]
    return (float(q @ a) + float(k @ a)) / math.sqrt(HEAD_DIM)


def kerple_bias(kernel, r2_highest=math.inf):
    """Chi et al. 2022 with the authors' bounds (r1, r2 >= 0.01; power: r2 <= 2)."""
    def bias(scheme, q, k, i, j, h, pi, pj, last):
        r1 = max(0.01, float(scheme.r1[h]))
        r2 = min(r2_highest, max(0.01, float(scheme.r2[h])))
        return -kernel(abs(j - i), r1, r2)
    return bias


def sandwich_bias(scheme, q, k, i, j, h, pi, pj, last):
    dim = scheme.settings.dim or HEAD_DIM
    inner = sum(math.cos((j - i) / 10000 ** (2 * m / dim)) for m in range(1, dim // 2 + 1))  # p_i·p_j
    return (inner - dim / 2) * HEADS / (8 * (h + 1))


def fire_bias(scheme, q, k, i, j, h, pi, pj, last):
    """f(ψ(i - j)/ψ(max(L, pi))), pi the query's position (the tokens before it); in the encoder
    a key after the query is normalised by the tokens after it (to the row's last), and negated."""
    c = abs(float(scheme.c))
    threshold = abs(float(scheme.threshold_scale) * scheme.settings.threshold)
    psi = lambda x: math.log(c * x + 1)  # noqa: E731
    context = pi if j <= i else last - pi
    side = 1 if j < i else -1
    x = side * psi(abs(i - j)) / (psi(max(threshold, context)) + 1e-6)
    return float(scheme.mlp(torch.tensor([x]))[h])


def ssmax_scale(scheme, h, keys):
    return float(scheme.s[h]) * math.log(keys)


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
    "kerple_log": dict(bias=kerple_bias(lambda d, r1, r2: r1 * math.log(1 + r2 * d))),
    "kerple_power": dict(bias=kerple_bias(lambda d, r1, r2: r1 * d ** r2, r2_highest=2.0)),
    "sandwich": dict(bias=sandwich_bias),
    "fire": dict(bias=fire_bias),
    "ssmax": dict(scale=ssmax_scale),
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
        last = max(token_position[j] for j in range(length) if not key_padding_mask[b, j])  # the row's last token's
        for h in range(HEADS):
            def rotated(vector, position):
                for scheme, reference in parts:
                    vector = reference.get("rotate", lambda s, vec, p: vec)(scheme, vector, position)
                return vector

            for i in range(length):
                logits = []
                p_i = columns[i]
                q_i = rotated(q[i, b, h], p_i)
                blocked = [bool(key_padding_mask[b, j]) or (attention.causal and j > i) for j in range(length)]
                keys_attended = max(1, blocked.count(False))
                for j in range(length):
                    if blocked[j]:
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
                            e += reference["bias"](scheme, q_i, k_j, p_i, p_j, h, token_position[i], token_position[j],
                                                   last)
                    for scheme, reference in parts:  # the whole input of the softmax
                        if "scale" in reference:
                            e *= reference["scale"](scheme, h, keys_attended)
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
    "sandwich:dim=4", "fire:threshold=2", "fire:width=4,layers=shared", "kerple_power+rope", "rope+ssmax",
    "shaw+ssmax", "huang3+kerple_log+ssmax", "sandwich+ssmax:s=2",
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
    (tests/plugin/test_explicit_positions.py: only in training, read by every scheme)."""
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
    ("kerple_log", False, 2 * HEADS), ("kerple_power", True, 2 * HEADS), ("sandwich", False, 0),
    ("fire", False, 2 * 32 + 32 * HEADS + HEADS + 2), ("fire:width=4", True, 2 * 4 + 4 * HEADS + HEADS + 2),
    ("ssmax", False, HEADS), ("rope+ssmax", True, HEADS),
])
def test_parameters_per_layer(spec, causal, rows):
    """Each scheme's parameters in one layer, as docs/positions.md counts them."""
    assert sum(p.numel() for p in build(spec, causal).parameters()) == rows


@pytest.mark.parametrize("spec, separate_tables", [
    ("shaw", 3), ("shaw:layers=shared", 1), ("t5", 1), ("t5:layers=separate", 3), ("rel_scalar", 3),
    ("huang4:layers=shared", 1), ("abs_scalar", 3), ("kerple_log", 3), ("fire", 3), ("fire:layers=shared", 1),
    ("ssmax", 3),
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


def test_a_plus_that_signs_a_value_is_the_values():
    """'+' joins schemes, except where it signs a value or an exponent: shaw:k=+5 is k=5, not
    'shaw:k=' and a scheme '5'."""
    spec = PositionSpec.parse("shaw:k=+5 + rope:base=1e+3,factor=+2.5E+0,scaling=pi+alibi:slope= +0.5")
    settings = dict(spec.schemes)
    assert (settings["shaw"].k, settings["rope"].base, settings["rope"].factor, settings["alibi"].slope) == \
        (5, 1e3, 2.5, 0.5)
    assert str(spec) == "shaw:k=5+rope:base=1000.0,scaling=pi,factor=2.5+alibi:slope=0.5"


def test_legacy_max_relative_position_is_the_default_k():
    assert dict(PositionSpec.parse("abs+shaw", legacy_defaults={"k": 8}).schemes)["shaw"].k == 8
    assert dict(PositionSpec.parse("shaw:k=4", legacy_defaults={"k": 8}).schemes)["shaw"].k == 4
    assert dict(PositionSpec.parse("shaw").schemes)["shaw"].k == 16


@pytest.mark.parametrize("spec, message", [
    ("abs+lstm", "both are input schemes"), ("shaw+shaw_k", "both are Shaw schemes"),
    ("huang1+huang3", "multiplicative"), ("rope+rope", "cannot be combined"), ("", "empty position spec"),
    ("none+abs", "unknown position scheme 'none'"), ("bogus", "unknown position scheme 'bogus'"),
    ("shaw:q=3", r"shaw has no setting 'q=3'; it takes k=16, heads=shared, layers=separate"),
    ("shaw:k", "shaw has no setting 'k'"), ("shaw:k=0", "must be >= 1"), ("shaw:k=x", "is not an integer"),
    ("t5:heads=both", "expected one of separate, shared"), ("xl:biases=maybe", "true or false"),
    ("huang2:clip=0", "clip must be >= 1 or none"), ("lstm:hidden=1", "it takes no settings"),
    ("abs:shift=-1", "shift must be between 0 and"), ("t5:buckets=7", "even number"),
    # issue 23.10: every numeric setting finite and in range, each key once
    ("shaw:k=4,k=5", r"shaw sets k twice \('k=4' and 'k=5'\)"), ("t5:buckets=8,buckets=8", "sets buckets twice"),
    ("rope:base=nan", r"rope:base='nan' is not a finite number"), ("rope:base=inf", "is not a finite number"),
    ("rope:base=-inf", "is not a finite number"), ("rope:base=1", "base must be a finite number > 1"),
    ("abs:shift=99999999999", "shift must be between 0 and 8388608"), ("rel_scalar:clip=1.5", "is not an integer"),
    ("kerple_log:r1=1", "kerple_log has no setting 'r1=1'; it takes no settings"),
    ("sandwich:dim=3", "dim must be an even number"), ("sandwich:dim=0", "even number from 2"),
    ("sandwich:dim=100000", "even number from 2 to 4096"), ("fire:c=0", "c must be a finite number > 0"),
    ("fire:c=nan", "is not a finite number"), ("fire:threshold=-1", "threshold must be a finite number >= 0"),
    ("fire:width=0", "width must be from 1"), ("fire:layers=some", "expected one of separate, shared"),
    ("ssmax:s=0", r"s must be a number in \(0, 100.0\]"), ("ssmax:s=-inf", "is not a finite number"),
    ("ssmax:s=1e300", r"s must be a number in \(0, 100.0\] \(the logits are multiplied by s·log n"),
    ("rope+ssmax+ssmax", "cannot be combined"),
    ("alibi:slope=0", "slope must be a finite number > 0"), ("alibi:offset=nan", r"alibi:offset='nan' is not a finite"),
    ("rand", "rand needs max=N .* or shift=K"), ("rand:max=0", "max must be between 1 and 8388608"),
    ("lstm+rand:max=64", r"rand in 'lstm\+rand:max=64' changes nothing"), ("rand:max=9+rand:shift=1", "cannot be combined"),
    ("ssmax+rand:shift=5", r"rand in 'ssmax\+rand:shift=5' changes nothing"),
    ("abs:shift=5+rand:max=64", "shift=5 in .* is rand's setting, and rand is there too"),
    ("rope:scaling=pi", "go together"), ("rope:factor=2", "go together"), ("rope:factor=0.5", "factor must be"),
    ("rope:scaling=yarn,factor=2", "yarn needs it"), ("rope:scaling=ntk,factor=2,original=64", "yarn's setting"),
    ("rope:scaling=yarn,factor=2,original=0", "original must be from 1 to"), ("rope:scaling=linear", "expected one of"),
    # the same for the settings of rand, rope's scalings and alibi: finite, in range, each once
    ("rand:max=99999999999", "max must be between 1 and 8388608"), ("rand:shift=99999999999", "between 0 and 8388608"),
    ("rand:max=9,max=10", r"rand sets max twice"), ("abs:shift=5,shift=6", r"rand sets shift twice"),
    ("rope:scaling=pi,factor=inf", r"rope:factor='inf' is not a finite number"),
    ("rope:scaling=ntk,factor=1e300", "factor must be a finite number from 1 to 16777216"),
    ("rope:scaling=yarn,factor=2,original=99999999999", "original must be from 1 to 16777216"),
    ("alibi:slope=inf", "is not a finite number"), ("alibi:slope=1e300", "slope must be .* at most 32768"),
    ("alibi:offset=-1e300", "offset must be a finite number from -16777216 to 16777216"),
    ("alibi:trainable=true,trainable=false", "alibi sets trainable twice"),
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
    with torch.inference_mode():
        attention(x, memo=PassMemo())
    out, _ = attention(x.clone().requires_grad_(), memo=PassMemo())
    out.sum().backward()
    assert attention.positions.key_table.grad is not None


def span_of(q_start, q_len, causal, key_padding_mask=None):
    return AttentionSpan(q_start, q_len, q_start + q_len, causal, key_padding_mask, torch.device("cpu"), PassMemo())


def bias_of(scheme, span):  # H x Tq x Tk of one row
    q = torch.zeros(1, scheme.context.num_heads, span.q_len, scheme.context.head_dim)
    return scheme.logit_bias(q, q, span)[0]


# --- issue 23.9: tables sized by what an input can reach ----------------------------------
@pytest.mark.parametrize("spec, causal, message", [
    ("shaw:k=100000", False, r"shaw \(encoder\): k=100000 exceeds 19, the longest distance in a sequence of "
                             r"--max-source-positions 20 tokens.*Use k <= 19, or raise --max-source-positions"),
    ("shaw_sin:k=99999999999", True, r"shaw_sin \(decoder\): k=99999999999 exceeds 19, .*--max-target-positions 20"),
    ("huang3:clip=20", False, r"huang3 \(encoder\): clip=20 exceeds 19"),
    ("rel_scalar:clip=99999999999", True, r"rel_scalar \(decoder\): clip=99999999999 exceeds 19"),
])
def test_a_table_beyond_the_longest_distance_is_refused(spec, causal, message):
    with pytest.raises(ValueError, match=message):
        build(spec, causal)


def test_shaw_costs_what_the_input_needs_not_what_its_table_holds():
    """k = 2000 on a 6-token input: no tensor but the table (and its gradient) has its 4001
    rows; k = 100000 died in the backward pass when every call used all 2k+1 rows."""
    from test_model_invariants import ShapeRecorder

    torch.manual_seed(0)
    positions = build("shaw:k=2000,heads=separate", causal=False, max_positions=4096)
    attention = RelPosSelfAttention(EMBED_DIM, HEADS, positions=positions)
    x = torch.randn(6, 2, EMBED_DIM)
    with ShapeRecorder() as recorder:
        out, _ = attention(x)
        out.sum().backward()
    table_shape = tuple(positions.key_table.shape)
    assert table_shape == (HEADS, 4001, HEAD_DIM)
    assert not [shape for shape in recorder.shapes if 4001 in shape and shape != table_shape]
    assert positions.key_table.grad[:, 2000 - 5:2000 + 6].abs().sum() > 0  # the reached rows learn


# --- issue 21.8: per-head tables start as a shared one --------------------------------------
@pytest.mark.parametrize("spec", ["shaw:heads=separate", "shaw", "huang4:clip=16", "huang4:clip=16,heads=shared"])
def test_every_head_table_starts_as_a_shared_table_does(spec):
    """Xavier-uniform over each head's R x d_h table: bound sqrt(6/(R + d_h)). On the 3-D
    stack xavier_uniform_ took fan-in R·d_h and fan-out H·d_h: std 0.028 instead of 0.144."""
    torch.manual_seed(0)
    context_base = StackContext(embed_dim=512, num_heads=8, num_layers=1, causal=False, max_positions=1024)
    scheme = PositionSpec.parse(spec).build_attention_layers(context_base)[0]
    table = scheme.key_table if hasattr(scheme, "key_table") else scheme.table
    rows, head_dim = table.shape[-2:]
    bound = math.sqrt(6 / (rows + head_dim))
    assert (rows, head_dim) == (33, 64)
    assert float(table.abs().max()) <= bound
    assert float(table.std()) == pytest.approx(bound / math.sqrt(3), rel=0.05)  # 0.144


# --- the new schemes against their authors' code, re-expressed -----------------------------
@pytest.mark.parametrize("name", ["kerple_log", "kerple_power"])
def test_kerple_equals_the_authors_code(name):
    """chijames/KERPLE, megatron/mpu/layers.py (ParallelKerpleLog, ParallelKerplePower):
    their forward with their parameter names, on a causal 50-token pass and on the last
    token of a cached step, some parameters outside the authors' bounds."""
    torch.manual_seed(0)
    scheme = build(name, causal=True, heads=8)
    with torch.no_grad():
        scheme.r1[0], scheme.r2[1], scheme.r2[2] = -0.5, 3.0, 1e-4
    n, eps = 50, 1e-2
    diff = torch.tril(torch.arange(n).view(n, 1).repeat(1, n) + torch.arange(0, -n, -1)).float()
    r1, r2 = scheme.r1.detach(), scheme.r2.detach()
    if name == "kerple_log":
        bias_p, bias_a = r1.clamp(min=eps), r2.clamp(min=eps)
        theirs = -bias_p * torch.log(1 + bias_a * diff)
    else:
        bias_a, bias_p = r1.clamp(min=eps), r2.clamp(min=eps, max=2)
        theirs = -diff.pow(bias_p) * bias_a
    causal = torch.ones(n, n).tril().bool()
    with torch.no_grad():
        ours = bias_of(scheme, span_of(0, n, causal=True))
        step = bias_of(scheme, span_of(n - 1, 1, causal=True))  # their inference: the last row
    torch.testing.assert_close(ours[:, causal], theirs[:, causal], atol=1e-5, rtol=1e-6)
    torch.testing.assert_close(step[:, 0], theirs[:, -1], atol=1e-5, rtol=1e-6)


def test_kerple_bounds_hold_and_a_parameter_out_of_range_can_come_back():
    """The forward pass uses the authors' bounds; the gradient of a parameter outside them
    is kept when a descent step would bring it back, dropped when it would push further."""
    scheme = build("kerple_power", causal=True)
    with torch.no_grad():
        scheme.r1.fill_(-1.0)  # acts as 0.01
        scheme.r2.fill_(3.0)  # acts as 2
    span = span_of(0, 6, causal=True)
    distance = torch.arange(6.0).view(-1, 1) - torch.arange(6.0)  # i - j
    expected = -0.01 * distance.clamp(min=0) ** 2
    bias = bias_of(scheme, span)
    torch.testing.assert_close(bias[:, distance >= 0], expected[distance >= 0].expand(HEADS, -1))
    bias.sum().backward()  # wants a larger r1 (back in range) and a larger r2 (further out)
    assert (scheme.r1.grad < 0).all() and (scheme.r2.grad == 0).all()
    scheme.zero_grad()
    (-bias_of(scheme, span).sum()).backward()  # wants a smaller r1 (further out) and a smaller r2 (back)
    assert (scheme.r1.grad == 0).all() and (scheme.r2.grad > 0).all()


def test_kerple_bias_stays_finite_in_float16():
    """A strong kernel (r1 = 100: 100·39² = 152100 > float16's 65504) is clamped at 2^15,
    where every float format's softmax weight is already 0, instead of becoming -inf."""
    scheme = build("kerple_power", causal=False)
    with torch.no_grad():
        scheme.r1.fill_(100.0)
        scheme.r2.fill_(2.0)
    q = torch.zeros(1, HEADS, 40, HEAD_DIM, dtype=torch.float16)
    bias = scheme.logit_bias(q, q, span_of(0, 40, causal=False))
    assert bias.dtype == torch.float16 and torch.isfinite(bias).all()
    assert float(bias.min()) == -2 ** 15 and float(bias[0, 0, 0, 1]) == -100.0
    # the edge: 100·18² = 32400 is kept, 100·19² = 36100 is clamped
    assert float(bias[0, 0, 0, 18]) == -32400.0 and float(bias[0, 0, 0, 19]) == -2 ** 15


@pytest.mark.parametrize("causal", [False, True], ids=["encoder", "decoder"])
def test_sandwich_equals_nemos(causal):
    """NVIDIA NeMo's SandwichRelativePositionEmbedding (d̄ = head size, scales h·8/H)
    re-expressed, 8 heads of 64 on 40 tokens."""
    context_base = StackContext(embed_dim=512, num_heads=8, num_layers=1, causal=causal, max_positions=1024)
    scheme = PositionSpec.parse("sandwich").build_attention_layers(context_base)[0]
    n, hidden, heads = 40, 64, 8
    relative = (torch.arange(n)[None, :] - torch.arange(n)[:, None]).abs().float()
    inv_freq = 1.0 / (10000 ** (2 * torch.arange(1, hidden / 2 + 1) / hidden))
    bias = torch.sum((relative[:, :, None] * inv_freq).cos(), dim=2).repeat(heads, 1, 1)
    scales = torch.arange(1, heads + 1)[:, None, None]
    theirs = (bias - hidden / 2) / (scales * 8 / heads)
    visible = torch.ones(n, n).tril().bool() if causal else torch.ones(n, n, dtype=torch.bool)
    ours = bias_of(scheme, span_of(0, n, causal))
    torch.testing.assert_close(ours[:, visible], theirs[:, visible], atol=2e-5, rtol=1e-6)


def test_fire_decoder_equals_the_papers_code():
    """Li et al. 2024, appendix: the FIRE module re-expressed, with a threshold small enough
    (L = 7.3) that the normaliser grows along the 40 queries."""
    torch.manual_seed(0)
    scheme = build("fire", causal=True, heads=8)
    with torch.no_grad():
        scheme.c.fill_(0.37)
        scheme.threshold_scale.fill_(7.3 / 512)
    n, eps = 40, 1e-6
    positions = torch.arange(n, dtype=torch.float)
    rel_distance = positions[:, None] - positions[None, :]
    threshold = torch.abs(scheme.threshold_scale * scheme.settings.threshold)
    pos_normalizer = torch.max(positions, threshold)[:, None]
    rel_distance = torch.log(torch.abs(scheme.c * rel_distance) + 1)
    pos_normalizer = torch.log(torch.abs(scheme.c * pos_normalizer) + 1) + eps
    with torch.no_grad():
        theirs = scheme.mlp((rel_distance / pos_normalizer).unsqueeze(-1)).permute(2, 0, 1)  # H x n x n
        ours = bias_of(scheme, span_of(0, n, causal=True))
    causal = torch.ones(n, n).tril().bool()
    torch.testing.assert_close(ours[:, causal], theirs[:, causal], atol=1e-6, rtol=1e-6)


def test_fire_encoder_reads_each_side_from_its_own_context():
    """The bidirectional form: the bias of the pair (i, j), j after i, equals the causal
    bias of the mirrored pair in the reversed sentence, with the MLP input negated."""
    torch.manual_seed(0)
    encoder = build("fire:threshold=3", causal=False)
    n = 12
    with torch.no_grad():
        ours = bias_of(encoder, span_of(0, n, causal=False))  # H x n x n
        decoder = build("fire:threshold=3", causal=True)
        decoder.load_state_dict(encoder.state_dict())
        first_layer = decoder.mlp[0]
        first_layer.weight.neg_()  # f(-x) through the decoder's input x
        mirrored = bias_of(decoder, span_of(0, n, causal=True)).flip(-1, -2)  # pair (n-1-i, n-1-j)
    after = torch.ones(n, n).triu(1).bool()
    torch.testing.assert_close(ours[:, after], mirrored[:, after])


def test_ssmax_equals_scalable_softmax_with_the_keys_a_query_attends_to():
    """The scalable-softmax package's forward, softmax(x·s·log n) over x's last dimension,
    on each query's unmasked logits: the real keys of a left-padded row (encoder) and those
    up to the query (decoder)."""
    torch.manual_seed(0)
    for causal in (False, True):
        positions = build("ssmax", causal)
        torch.nn.init.normal_(positions.s)
        attention = RelPosSelfAttention(EMBED_DIM, HEADS, positions=positions, causal=causal).eval()
        lengths, total = [9, 5, 2], 9
        padding_mask = (right_padding_mask if causal else left_padding_mask)(lengths, total)
        x = torch.randn(total, len(lengths), EMBED_DIM)
        with torch.no_grad():
            _, weights = attention(x, padding_mask, need_weights=True)
            q = attention._split_heads(attention.q_proj(x)) * attention.scaling
            k = attention._split_heads(attention.k_proj(x))
            logits = q @ k.transpose(-1, -2)
        for b in range(len(lengths)):
            real = (~padding_mask[b]).nonzero().squeeze(1)
            for i in real.tolist():
                keys = real[real <= i] if causal else real
                for h in range(HEADS):
                    s = positions.s[h, 0, 0].detach()
                    theirs = torch.softmax(logits[b, h, i, keys] * (s * math.log(keys.numel())), dim=-1)
                    torch.testing.assert_close(weights[b, h, i, keys], theirs, atol=1e-6, rtol=1e-5)


# --- issue 38.6: where each scheme's computation changes ----------------------------------
@pytest.mark.parametrize("spec, causal, edges", [
    # T5's bucket of distance d (exact below 4, then 4 + floor(log(d/4)/log(20/4)·4), at most 7)
    # changes at d = 1, 2, 3, 4, 6, 9, 14; a distance d first occurs in d + 1 tokens
    ("t5:buckets=8,max_distance=20", True, [2, 3, 4, 5, 7, 10, 15]),
    ("shaw:k=5", False, [7]),  # 7 tokens: the first distance beyond k, clipped
    ("shaw_k:k=5+huang2:clip=3", True, [5, 7]),  # a chain has its schemes' edges
    ("rel_scalar", False, [MAX_POSITIONS + 1]),  # the first length beyond the table: refused
    ("huang3:clip=3", False, [5, 1 + math.isqrt(HuangMethod3.pairwise_chunk_elements // EMBED_DIM)]),
    ("fire:threshold=40,width=4", True, [42, 1 + math.isqrt(FIRE.pairwise_chunk_elements // 4)]),
    ("alibi", False, []), ("rope", True, []),
])
def test_each_scheme_says_at_which_lengths_its_computation_changes(spec, causal, edges):
    assert build(spec, causal).length_edges() == edges


def test_input_and_training_positions_say_at_which_lengths_theirs_changes():
    assert PositionSpec.parse("abs_learned").build_input(context(False)).length_edges() == [MAX_POSITIONS + 1]
    assert PositionSpec.parse("abs").build_input(context(False)).length_edges() == []
    assert PositionSpec.parse("abs+rand:max=9").build_training_positions(context(False)).length_edges() == [10]
