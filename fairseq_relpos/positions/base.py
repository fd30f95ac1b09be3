"""The interface every position scheme implements, and what schemes share.

A scheme acts at one or more of these points (``docs/positions.md`` has every scheme's
equation and which points it uses):

* **training positions** (:class:`TrainingPositions`): decides where the tokens of a
  training sequence sit (``rand``: Ruoss et al.'s randomized positions and SHAPE's shift);
  at inference, and without such a scheme, the tokens of a sequence sit at ``0 … n-1``;
* **input** (:class:`InputScheme`): changes the scaled token embeddings before the first
  layer (``abs``, ``abs_learned``, ``lstm``);
* **inside one attention layer** (:class:`AttentionScheme`), in the order the attention
  module calls them:

  1. :meth:`~AttentionScheme.rotate` queries and keys at their positions, before the keys
     enter the decoding cache (``rope``);
  2. :meth:`~AttentionScheme.transform_logits`: rewrite the content logits ``q·k``
     (multiplicative schemes: ``huang1`` … ``huang3``);
  3. :meth:`~AttentionScheme.logit_bias`: add to the logits knowing q, k and positions
     (``shaw``, ``t5``, ``alibi``, ``xl``, ``kerple_log``…);
  4. :meth:`~AttentionScheme.logit_scale`: multiply the whole input of the softmax, content
     and biases, by a factor per query and head, before masking (``ssmax``);
  5. :meth:`~AttentionScheme.value_term`: add to the output through the attention
     probabilities (``shaw``'s ``a^V``).

  With ``--attention-impl flex`` a scheme gives its bias and its factor of the logits as
  functions of the kernel's indices instead (:meth:`~AttentionScheme.flex_bias`,
  :meth:`~AttentionScheme.flex_factor`).

  What the attention module needs to know of a scheme (``transforms_logits``,
  ``has_value_term``, ``flex_covered``) follows from the methods its class overrides, when
  the class is made; a class that sets one of these flags otherwise is refused.

Positions are an explicit input (:class:`Positions`), the same for every scheme of a stack:
input schemes read each token's position, attention schemes read them through the
:class:`AttentionSpan` of a call (its distances, its positions).  A scheme declares its
settings as a dataclass (``Settings``) with defaults; a spec sets them as
``name:key=value,…``.  Self-attention numbers its keys ``0 … k_len-1`` and its queries
``q_start … k_len-1``: a full pass has ``q_start = 0``, an incremental step that adds
``q_len`` tokens to a cache of ``q_start`` keys numbers them the same way, so a scheme never
needs to know which case it is in.  Distances are ``p_j - p_i``, key minus query.
"""
import dataclasses
import math
from typing import Any, Callable, Dict, Hashable, List, Optional, Tuple

import torch
from torch import Tensor, nn

IncrementalState = Optional[Dict[str, Dict[str, Optional[Tensor]]]]
#: a term of one (query, key) pair inside a FlexAttention kernel, from the kernel's batch,
#: query and key indices (0-d int tensors)
PairTerm = Callable[[Tensor, Tensor, Tensor], Tensor]
#: the same with the head index: (batch, head, query, key) -> the term of that logit
ScoreTerm = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]


@dataclasses.dataclass(frozen=True)
class StackContext:
    """What a scheme may need to know about the stack (encoder or decoder) it is built into."""

    embed_dim: int
    num_heads: int
    num_layers: int
    causal: bool  # decoder self-attention: a query never sees later keys
    max_positions: int  # --max-source/target-positions: the size of position-indexed tables
    cross: bool = False  # encoder-decoder attention (--cross-pos): target queries, source keys

    @property
    def head_dim(self) -> int:
        return self.embed_dim // self.num_heads

    @property
    def side(self) -> str:
        if self.cross:
            return "encoder-decoder attention"
        return "decoder" if self.causal else "encoder"


@dataclasses.dataclass(frozen=True)
class NoSettings:
    """A scheme without settings."""


class PassMemo:
    """Values every layer of one forward pass of a stack may share (a distance index, a bias
    shared across layers), built by the first layer that asks for them.

    The stack makes one for each pass and hands it down to its layers (x-transformers'
    pattern); it goes with the pass, so no tensor made under ``torch.inference_mode()`` or
    holding an old autograd graph is ever reused.  An attention call given none (called on
    its own) makes its own.
    """

    def __init__(self):
        self._values: Dict[Hashable, Any] = {}

    def get(self, key: Hashable, build: Callable[[], Any]) -> Any:
        if key not in self._values:
            self._values[key] = build()
        return self._values[key]


@dataclasses.dataclass(frozen=True)
class Positions:
    """Where the tokens of a batch sit: column ``c`` of row ``b`` at ``columns[c] + row_shift[b]``.

    The columns are shared by the rows, so that the distances ``columns[j] - columns[i]`` are
    one ``Tq x Tk`` index for the whole batch; what differs between rows is a constant, which
    no distance sees: SHAPE's offset, and the left padding of a source (a row's first real
    token takes the batch's first position, so padding never moves a position).
    """

    columns: Tensor  # T, long, strictly increasing
    row_shift: Optional[Tensor] = None  # B x 1, long; None: 0 for every row
    start: Optional[int] = 0  # columns are start, start+1, …; None: drawn, read them

    @classmethod
    def counting(cls, length: int, device, padding_mask: Optional[Tensor] = None) -> "Positions":
        """``0 … length-1``, each row's first real token (after ``padding_mask``'s left
        padding, B x length) at 0: the positions of every sequence at inference."""
        return cls.of_batch(torch.arange(length, device=device), padding_mask, None, start=0)

    @classmethod
    def of_batch(cls, columns: Tensor, padding_mask: Optional[Tensor], offsets: Optional[Tensor],
                 start: Optional[int] = None) -> "Positions":
        """``columns`` for the batch, moved in each row by its ``offsets`` (B x 1) and so that
        the row's first real token sits at ``columns[0]``."""
        shift = offsets
        if padding_mask is not None and padding_mask[:, 0].any():
            leading_pads = padding_mask.long().cumprod(dim=1).sum(dim=1, keepdim=True)  # B x 1
            first_token = leading_pads.clamp(max=columns.numel() - 1)
            padding_shift = columns[0] - columns[first_token]  # B x 1
            shift = padding_shift if shift is None else shift + padding_shift
        return cls(columns, shift, start)

    def sliced(self, first: int) -> "Positions":
        """The positions of columns ``first …``."""
        return Positions(self.columns[first:], self.row_shift, None if self.start is None else self.start + first)

    def rows(self, padding_mask: Optional[Tensor] = None) -> Tensor:
        """Each token's position, B|1 x T; 0 at padding, where ``padding_mask`` (B x T) says."""
        positions = self.columns.unsqueeze(0)
        if self.row_shift is not None:
            positions = positions + self.row_shift
        return positions if padding_mask is None else positions.masked_fill(padding_mask, 0)


@dataclasses.dataclass
class AttentionSpan:
    """Where the queries and keys of one attention call sit, and the pass's memo.

    ``keys`` defaults to ``0 … k_len-1`` (after the left padding of ``key_padding_mask``) and
    ``queries`` to the keys' from ``q_start`` on, as in self-attention; encoder-decoder
    attention gives both (target queries, source keys)."""

    q_start: int
    q_len: int
    k_len: int
    causal: bool
    key_padding_mask: Optional[Tensor]  # B x Tk, True at padding
    device: torch.device
    memo: PassMemo
    keys: Optional[Positions] = None
    queries: Optional[Positions] = None

    def __post_init__(self):
        if self.keys is None:
            mask = self.key_padding_mask
            # once a pass, not once a layer: finding left padding waits for the device.  The memo
            # holds the mask, so its id is not reused by another tensor while the pass lasts.
            _, self.keys = self.memo.get(("counting", self.k_len, id(mask)),
                                         lambda: (mask, Positions.counting(self.k_len, self.device, mask)))
        if self.queries is None:
            self.queries = self.keys.sliced(self.q_start)

    def once(self, key: Hashable, build: Callable[[], Any]) -> Any:
        """``build()`` for this call's queries and keys, built by the first layer of the pass
        that asks with ``key`` and shared by the others (a bias shared across layers: key it
        by the scheme itself, which the memo then holds while the pass lasts, so that no
        other object takes its place; one that is the same in every layer: by its name)."""
        return self.memo.get((key, self.q_start, self.q_len, self.k_len), build)

    def distances(self, lowest: int, highest: int) -> Tensor:
        """``clip(p_j - p_i, lowest, highest) - lowest`` for every (query, key): a ``Tq x Tk``
        index into a table whose rows hold the distances ``lowest … highest``."""
        self._require_shared_rows("distances")

        def build():
            distance = self.keys.columns.unsqueeze(0) - self.queries.columns.unsqueeze(1)  # Tq x Tk
            return distance.clamp(lowest, highest) - lowest

        return self.once(("distances", lowest, highest), build)

    def flex_relative_positions(self) -> PairTerm:
        """What :meth:`relative_positions` is inside a FlexAttention kernel: ``p_j - p_i`` from
        the kernel's (batch, query, key) indices.  Positions are read from tensors, never held
        as Python numbers, so that one compiled kernel serves calls of every length."""
        key_positions, query_positions = self.keys.columns, self.queries.columns  # Tk, Tq
        if self.queries.row_shift is self.keys.row_shift:
            return lambda b, q_idx, kv_idx: key_positions[kv_idx] - query_positions[q_idx]
        row_shift = _row_shift(self.keys) - _row_shift(self.queries)  # B: target queries, left-padded sources
        return lambda b, q_idx, kv_idx: key_positions[kv_idx] - query_positions[q_idx] + row_shift[b]

    def flex_distances(self, lowest: int, highest: int) -> PairTerm:
        """What :meth:`distances` is inside a FlexAttention kernel: ``clip(p_j - p_i, lowest,
        highest) - lowest``, a row of a table of the distances ``lowest … highest``.  The kernel
        also reads pairs it then masks (in a block that is partly masked), whose distances may
        lie beyond the call's: the clip keeps every read within the table."""
        self._require_shared_rows("flex_distances")
        distance = self.flex_relative_positions()
        bounds = self._flex_constant(lowest, highest)
        return lambda b, q_idx, kv_idx: distance(b, q_idx, kv_idx).clamp(bounds[0], bounds[1]) - bounds[0]

    def flex_absolute_distances(self, highest: int) -> PairTerm:
        """``min(|p_j - p_i|, highest)`` inside a FlexAttention kernel: a row of a table of the
        distances ``0 … highest`` (clipped as :meth:`flex_distances` clips)."""
        distance = self.flex_relative_positions()
        bound = self._flex_constant(highest)
        return lambda b, q_idx, kv_idx: distance(b, q_idx, kv_idx).abs().clamp(max=bound[0])

    def _flex_constant(self, *values: int) -> Tensor:
        """``values`` as a tensor on the device, once per pass: a kernel compiled for one call
        then serves calls whose bounds differ."""
        return self.once(("flex constant", values), lambda: torch.tensor(values, device=self.device))

    def distance_range(self) -> Tuple[int, int]:
        """The lowest and the highest ``p_j - p_i`` of any (query, key) pair a query may
        attend to (causal attention: no positive distance)."""
        self._require_shared_rows("distance_range")
        queries, keys = self.queries, self.keys
        if queries.start is not None and keys.start is not None:
            lowest = keys.start - (queries.start + self.q_len - 1)
            highest = keys.start + self.k_len - 1 - queries.start
        else:  # drawn positions (training): read the ends of the columns, once per pass
            lowest, highest = self.once("distance_range", lambda: (
                torch.stack([keys.columns[0] - queries.columns[-1], keys.columns[-1] - queries.columns[0]]).tolist()))
        return lowest, 0 if self.causal else highest

    def longest_distance(self) -> int:
        """The largest ``|p_j - p_i|`` any real (unmasked) query-key pair of this call has."""
        lowest, highest = self.distance_range()
        return max(-lowest, highest)

    def relative_positions(self) -> Tensor:
        """``p_j - p_i`` for every (query, key), B|1 x Tq x Tk: one for the batch where queries
        and keys are positions of the same rows (self-attention), one per row where they are
        not (target queries, left-padded source keys)."""

        def build():
            if self.queries.row_shift is self.keys.row_shift:
                return (self.keys.columns.unsqueeze(0) - self.queries.columns.unsqueeze(1)).unsqueeze(0)
            return self.keys.rows().unsqueeze(1) - self.queries.rows().unsqueeze(2)

        return self.once("relative_positions", build)

    def key_token_positions(self) -> Tensor:
        """Each key's position (B|1 x Tk); padding, which fairseq puts on the left of
        sources, takes none (0)."""
        return self.once("key_positions", lambda: self.keys.rows(self.key_padding_mask))

    def _require_shared_rows(self, what: str):
        if self.queries.row_shift is not self.keys.row_shift:
            raise ValueError(f"AttentionSpan.{what}: queries and keys of this call are positions in different "
                             "sequences, whose distances differ by row; read relative_positions()")


def _row_shift(positions: Positions):
    """Each row's shift (B), or 0 where the rows share their positions."""
    return 0 if positions.row_shift is None else positions.row_shift.view(-1)


class PositionScheme(nn.Module):
    """What every scheme has: its registered name, its settings and its stack."""

    name: str  # set by @register_scheme
    Settings = NoSettings
    #: schemes of one family exclude each other in a spec (e.g. two input schemes)
    family: Optional[str] = None
    #: whether the scheme reads the tokens' positions (a scheme that reads only their order does not)
    reads_positions = True
    #: whether the scheme serves encoder-decoder attention (``--cross-pos``; attention schemes
    #: only): it reads the span's positions or counts its keys, never distances within one
    #: sequence (which :class:`AttentionSpan` refuses across sequences)
    applies_across = False

    def __init__(self, settings, context: StackContext):
        super().__init__()
        self.settings = settings
        self.context = context

    def max_positions(self) -> Optional[int]:
        """Longest sequence this scheme can encode; ``None`` when unbounded."""
        return None

    def length_edges(self) -> List[int]:
        """The input lengths at which the scheme's computation changes: from each on, a
        sequence takes a path that shorter ones do not (a new bucket, a clipped distance, one
        more chunk, a refusal beyond a table).  Implementations break first there, so the
        tests probe each from just below to just above; here, the first length beyond a
        bounded scheme's table."""
        bound = self.max_positions()
        return [] if bound is None else [bound + 1]

    def extra_repr(self) -> str:
        return spec_text(self.name, self.settings)


class InputScheme(PositionScheme):
    """Adds position information to scaled token embeddings before the first layer."""

    family = "input"

    def forward(
        self,
        x: Tensor,  # B x T x C
        padding_mask: Tensor,  # B x T, True at padding
        positions: Optional[Tensor] = None,  # B|1 x T, each token's; None: counting the row's tokens from 0
        incremental_state: IncrementalState = None,
    ) -> Tensor:  # B x T x C
        raise NotImplementedError

    @staticmethod
    def token_positions(padding_mask: Tensor, positions: Optional[Tensor]) -> Tensor:
        """``positions``, or where none are given those of a sequence at inference."""
        if positions is None:
            positions = Positions.counting(padding_mask.size(1), padding_mask.device, padding_mask).rows()
        return positions.masked_fill(padding_mask, 0)  # B x T


class TrainingPositions(PositionScheme):
    """Decides where the tokens of a training sequence sit; at inference, and in cached
    decoding, tokens sit at ``0 … n-1``.  Every other scheme of the stack reads the
    positions it draws."""

    family = "training_positions"

    def draw(self, batch_size: int, length: int, device) -> Tuple[Tensor, Optional[Tensor], Optional[int]]:
        """The batch's column positions (``length``, increasing), each row's offset (B x 1,
        or None) and the first column's position where the columns are consecutive (None
        where they are not)."""
        raise NotImplementedError

    def reach(self) -> Optional[int]:
        """A bound on the positions drawn (each below it), where one holds for every length."""
        return None

    def positions(self, padding_mask: Tensor) -> Positions:
        columns, offsets, start = self.draw(padding_mask.size(0), padding_mask.size(1), padding_mask.device)
        return Positions.of_batch(columns, padding_mask, offsets, start)


class AttentionScheme(PositionScheme):
    """Position terms of one attention layer; every default adds nothing.

    Its capabilities are derived from the methods a class overrides (:func:`capabilities`),
    so that the attention module never skips a term a scheme has."""

    #: whether the scheme has :meth:`transform_logits` / :meth:`value_term`: either needs the
    #: explicit softmax, so attention cannot go through the fused kernel
    transforms_logits = False
    has_value_term = False
    #: whether ``--attention-impl flex`` covers the scheme: its logit terms, if it has any, are
    #: computed inside the FlexAttention kernel (:meth:`flex_bias`, :meth:`flex_factor`)
    flex_covered = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for flag, (value, reason) in capabilities(cls).items():
            given = cls.__dict__.get(flag, value)
            if not (isinstance(given, bool) and given == value):
                raise TypeError(f"{cls.__module__}.{cls.__qualname__} sets {flag} = {given!r}, but {reason}: the "
                                "flag follows from the methods the scheme overrides; remove it")
            setattr(cls, flag, value)

    @classmethod
    def build_layers(cls, settings, context: StackContext) -> List["AttentionScheme"]:
        """One instance per layer, or one shared by all when ``settings.layers == 'shared'``."""
        if getattr(settings, "layers", "separate") == "shared":
            return [cls(settings, context)] * context.num_layers
        return [cls(settings, context) for _ in range(context.num_layers)]

    def rotate(self, x: Tensor, span: AttentionSpan) -> Tensor:  # B x H x Tq x dh, the call's new tokens
        return x

    def transform_logits(
        self, logits: Tensor, q: Tensor, k: Tensor, span: AttentionSpan
    ) -> Tensor:  # B x H x Tq x Tk; q is scaled by 1/sqrt(dh)
        return logits

    def logit_bias(
        self, q: Tensor, k: Tensor, span: AttentionSpan
    ) -> Optional[Tensor]:  # broadcastable to B x H x Tq x Tk
        return None

    def logit_scale(self, span: AttentionSpan) -> Optional[Tensor]:  # broadcastable to B x H x Tq x 1
        return None

    def value_term(
        self, probs: Tensor, span: AttentionSpan  # B x H x Tq x Tk, after dropout
    ) -> Optional[Tensor]:  # B x H x Tq x dh, added to probs @ V
        return None

    def flex_bias(self, q: Tensor, k: Tensor, span: AttentionSpan) -> Optional[ScoreTerm]:
        """:meth:`logit_bias` inside a FlexAttention kernel: the bias of one logit from the
        kernel's indices, reading tensors computed here (per distance, per head)."""
        return None

    def flex_factor(self, span: AttentionSpan) -> Optional[ScoreTerm]:
        """Inside a FlexAttention kernel, the factor by which :meth:`transform_logits`
        multiplies the content logit, where the transform is one (``huang1``, ``huang2``)."""
        return None


#: a term of the reference path, and the method that gives it inside a FlexAttention kernel
FLEX_TERMS = {"logit_bias": "flex_bias", "transform_logits": "flex_factor"}


def _overrides(cls, method: str) -> bool:
    return getattr(cls, method) is not getattr(AttentionScheme, method)


def capabilities(cls) -> Dict[str, Tuple[bool, str]]:
    """``flag -> (value, why)`` of an attention scheme class, from the methods it overrides;
    refuses a class whose kernel term has no reference term (``flex_bias`` without
    ``logit_bias``): the reference path would leave it out."""
    for term, flex_term in FLEX_TERMS.items():
        if _overrides(cls, flex_term) and not _overrides(cls, term):
            raise TypeError(f"{cls.__module__}.{cls.__qualname__} overrides {flex_term} but not {term}: "
                            f"--attention-impl reference would leave out the term {flex_term} gives the kernel")

    def overridden(method):
        value = _overrides(cls, method)
        return value, f"it {'overrides' if value else 'does not override'} {method}"

    uncovered = [f"overrides {term} without {flex_term}" for term, flex_term in FLEX_TERMS.items()
                 if _overrides(cls, term) and not _overrides(cls, flex_term)]
    if _overrides(cls, "value_term"):
        uncovered.append("overrides value_term, which a FlexAttention kernel cannot add")
    return {
        "transforms_logits": overridden("transform_logits"),
        "has_value_term": overridden("value_term"),
        "flex_covered": (not uncovered, "it " + " and ".join(uncovered) if uncovered else
                         "it gives every logit term it has to the kernel (flex_bias, flex_factor) and has no "
                         "value term"),
    }


class TableTooShort(ValueError):
    """A position-indexed table has no row for an input this long."""


def check_table(scheme: PositionScheme, needed: int, rows: int, what: str, unit: str, hint: str) -> None:
    """Refuses, naming the scheme and the options that size its table, an input that needs
    row ``needed`` of a table of ``rows``; never wraps round or clips silently."""
    if needed > rows:
        raise TableTooShort(
            f"{scheme.name} ({scheme.context.side}): {what} exceeds its table of {rows} {unit} "
            f"(--max-source-positions / --max-target-positions at training time); {hint}"
        )


def check_reach(scheme: PositionScheme, reach: int, setting: str) -> None:
    """Refuses a table that holds distances no input of the trained length has: its rows
    would never be trained, and a reach of 10^11 would allocate terabytes."""
    longest = scheme.context.max_positions - 1
    if reach > longest:
        option = "--max-target-positions" if scheme.context.causal else "--max-source-positions"
        raise ValueError(
            f"{scheme.name} ({scheme.context.side}): {setting}={reach} exceeds {longest}, the longest distance "
            f"in a sequence of {option} {scheme.context.max_positions} tokens; rows beyond it would never be "
            f"trained. Use {setting} <= {longest}, or raise {option}"
        )


def reached_range(span: "AttentionSpan", lowest: int, highest: int) -> Tuple[int, int]:
    """For a table whose rows hold the distances ``lowest … highest`` (clipped beyond): the
    first and the last distance of it this call reaches."""
    first, last = span.distance_range()
    return max(lowest, first), min(highest, last)


def reached_rows(span: "AttentionSpan", lowest: int, highest: int) -> Tuple[slice, Tensor]:
    """For a table whose rows hold the distances ``lowest … highest`` (clipped beyond): the
    rows this call reaches, and every (query, key) pair's row among them (``Tq x Tk``), so
    that products with the table cost what the input needs, not what the table holds."""
    first, last = reached_range(span, lowest, highest)
    return slice(first - lowest, last - lowest + 1), span.distances(first, last)


def flex_reached_rows(span: "AttentionSpan", lowest: int, highest: int) -> Tuple[slice, PairTerm]:
    """:func:`reached_rows` for a FlexAttention kernel: the rows, and each pair's row among
    them from the kernel's indices."""
    first, last = reached_range(span, lowest, highest)
    return slice(first - lowest, last - lowest + 1), span.flex_distances(first, last)


def head_rows(table: Tensor, num_heads: int) -> Tensor:
    """A ``H|1 x R`` table as ``H x R``, contiguous (a table shared by the heads repeated):
    what a FlexAttention kernel indexes by head."""
    return table.expand(num_heads, -1).contiguous()


def xavier_per_head(table: Tensor) -> Tensor:
    """Xavier-uniform initialisation of a ``R x dh`` table, or of each head's ``R x dh`` slice
    of a ``H|1 x R x dh`` stack, so that a head's table starts as a shared one does (on the
    stack itself, fan-in ``R·dh`` and fan-out ``H·dh`` would make it 5x smaller at R = 33,
    d_h = 64, H = 8)."""
    for head_table in table.data.view(-1, *table.shape[-2:]):
        nn.init.xavier_uniform_(head_table)
    return table


def sinusoids(positions: Tensor, dim: int, spectrum_dim: Optional[int] = None) -> Tensor:
    """Vaswani et al.'s sinusoidal encoding of (possibly negative) ``positions``.

    Returns ``positions.shape + (dim,)`` with ``PE[p, 2i] = sin(p / 10000^(2i/spectrum_dim))``
    and ``PE[p, 2i+1] = cos(…)``.  ``spectrum_dim`` defaults to ``dim``; the relative
    sinusoidal scheme takes the first ``d_head`` components of a ``d_model`` encoding
    (Rosendahl et al. 2019, eq. 8), i.e. ``dim = d_head`` with ``spectrum_dim = d_model``.
    Computed on the fly, so any position works: there is no table to outgrow.
    """
    spectrum_dim = spectrum_dim or dim
    even_indices = torch.arange(0, dim, 2, device=positions.device, dtype=torch.float32)
    inv_freq = torch.exp(even_indices * (-math.log(10000.0) / spectrum_dim))  # ceil(dim/2)
    angles = positions.float().unsqueeze(-1) * inv_freq  # ... x ceil(dim/2)
    interleaved = torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(-2)
    return interleaved[..., :dim]


def spec_text(name: str, settings) -> str:
    """``name:key=value,…`` with the settings that differ from the defaults."""
    changed = [
        f"{field.name}={_format_value(getattr(settings, field.name))}"
        for field in dataclasses.fields(settings)
        if getattr(settings, field.name) != field.default
    ]
    return name + (":" + ",".join(changed) if changed else "")


def _format_value(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return "none" if value is None else str(value)


class DistanceTableScheme(AttentionScheme):
    """A scheme with a trained row per distance ``j - i``, per head unless shared.

    The papers behind these tables (Huang et al. 2020 §3.5, Chen et al. 2021 eq. 8) clip
    nothing: the table holds every distance up to ``--max-*-positions`` - 1 and a longer
    input is refused.  ``clip=K`` holds ``-K … K`` instead (``-K … 0`` in the decoder, whose
    causal attention never sees positive distances) and accepts any length.
    """

    #: whether rows are indexed by ``|j - i|`` (the sign dropped) rather than ``j - i``
    unsigned = False

    def __init__(self, settings, context):
        super().__init__(settings, context)
        reach = context.max_positions - 1 if settings.clip is None else settings.clip
        check_reach(self, reach, "clip")
        self.reach = reach
        self.lowest = 0 if self.unsigned else -reach
        self.highest = 0 if context.causal and not self.unsigned else reach
        self.num_distances = self.highest - self.lowest + 1
        self.num_tables = context.num_heads if settings.heads == "separate" else 1

    def max_positions(self) -> Optional[int]:
        return self.context.max_positions if self.settings.clip is None else None

    def length_edges(self) -> List[int]:
        # the first length with a distance beyond the table: clipped, or refused without clip
        return [self.reach + 2]

    def window(self, span: AttentionSpan) -> Tuple[slice, Tensor]:
        """The table rows this call needs, and every (query, key) pair's row among them
        (a ``Tq x Tk`` index): products with the table then cost what the input needs, not
        what the table holds."""
        reach = self._checked_reach(span)
        if self.unsigned:
            index = span.once(("unsigned", reach), lambda: (span.distances(-reach, reach) - reach).abs())
            return slice(0, reach + 1), index
        return reached_rows(span, self.lowest, self.highest)

    def flex_window(self, span: AttentionSpan) -> Tuple[slice, PairTerm]:
        """:meth:`window` for a FlexAttention kernel: the rows, and each pair's row among them
        from the kernel's indices."""
        reach = self._checked_reach(span)
        if self.unsigned:
            return slice(0, reach + 1), span.flex_absolute_distances(reach)
        return flex_reached_rows(span, self.lowest, self.highest)

    def _checked_reach(self, span: AttentionSpan) -> int:
        """The largest ``|p_j - p_i|`` of the call that the table holds; a longer distance is
        refused where the table does not clip."""
        longest = span.longest_distance()
        if self.settings.clip is None:
            check_table(self, longest, self.reach, f"a distance of {longest}", "distances",
                        f"set {self.name}:clip=K to clip distances at K instead")
        return min(self.reach, longest)


def check_clip(clip: Optional[int]) -> None:
    if clip is not None and clip < 1:
        raise ValueError(f"clip must be >= 1 or none (no clipping), got {clip}")
