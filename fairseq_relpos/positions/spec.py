"""Position specs: ``none``, or schemes joined by ``+``, each with optional settings
(``abs+shaw:k=8``, ``rope+alibi``, ``t5:buckets=32,max_distance=128``), parsed and checked
against the registry, and built into a stack's schemes."""
import dataclasses
import math
import re
import typing
from typing import Any, Dict, List, Optional, Tuple

from .base import AttentionScheme, InputScheme, StackContext, TrainingPositions, spec_text
from .chain import SchemeChain
from .registry import NO_POSITIONS, SCHEMES, settings_help

#: the '+' that joins schemes: not one that signs a value (shaw:k=+5) or an exponent (rope:base=1e+4)
SCHEME_SEPARATOR = re.compile(r"(?<!=)(?<!=\s)(?<![0-9.][eE])\+")
#: settings that moved to another scheme, still read where they were: SHAPE's shift, which
#: the first releases spelt ``abs:shift=K``, is ``rand:shift=K``
MOVED_SETTINGS = {("abs", "shift"): "rand"}


@dataclasses.dataclass(frozen=True)
class PositionSpec:
    """The schemes of one stack, each with its settings, in the order given."""

    schemes: Tuple[Tuple[str, Any], ...]  # (name, Settings instance)

    @classmethod
    def parse(cls, text: Optional[str], option: str = "position spec",
              legacy_defaults: Optional[Dict[str, Any]] = None) -> "PositionSpec":
        """Parses ``NAME[:key=value,…]+…``.  ``legacy_defaults`` replace the default of a
        setting of that name in every scheme that has one, unless the spec sets it
        (``--max-relative-position K`` is ``{"k": K}``)."""
        if text is not None and not isinstance(text, str):  # --model-overrides "{'encoder_pos': 5}"
            raise ValueError(f"{option}: expected a position spec (text, such as 'shaw' or 'rope+alibi'), got "
                             f"{text!r} ({type(text).__name__})")
        if text is None or not text.strip():
            raise ValueError(f"{option}: empty position spec; expected 'none' or {_expected()}")
        parts = _move_settings([part.strip() for part in SCHEME_SEPARATOR.split(text)], option, text)
        if parts == [NO_POSITIONS]:
            return cls(())
        schemes, families = [], {}
        for part in parts:
            name, _, assignments = part.partition(":")
            name = name.strip()
            if name not in SCHEMES:
                raise ValueError(f"{option}: unknown position scheme {name!r} in {text!r}; expected "
                                 f"'none' or {_expected()}")
            scheme = SCHEMES[name]
            family = scheme.family or name
            if family in families:
                raise ValueError(f"{option}: {families[family]!r} and {name!r} cannot be combined in "
                                 f"{text!r}: both are {_family_words(family)}")
            families[family] = name
            schemes.append((name, _parse_settings(scheme, assignments, option, legacy_defaults or {})))
        if "training_positions" in families and not any(SCHEMES[name].reads_positions for name, _ in schemes
                                                        if not issubclass(SCHEMES[name], TrainingPositions)):
            raise ValueError(f"{option}: {families['training_positions']} in {text!r} changes nothing: no scheme "
                             "there reads positions (lstm reads the order of the tokens)")
        return cls(tuple(schemes))

    @classmethod
    def parse_across(cls, text: Optional[str], option: str = "--cross-pos") -> "PositionSpec":
        """A spec for encoder-decoder attention: attention schemes that apply across sequences."""
        spec = cls.parse(text, option)
        across = sorted(name for name, scheme in SCHEMES.items() if scheme.applies_across)
        for name, _ in spec.schemes:
            if not SCHEMES[name].applies_across:
                raise ValueError(f"{option}: {name} does not apply to encoder-decoder attention, whose queries and "
                                 f"keys belong to different sequences; expected 'none' or {', '.join(across)}")
        return spec

    def __str__(self):
        return "+".join(spec_text(name, settings) for name, settings in self.schemes) or NO_POSITIONS

    def _of_kind(self, kind) -> List[Tuple[str, Any]]:
        return [(name, settings) for name, settings in self.schemes if issubclass(SCHEMES[name], kind)]

    def build_training_positions(self, context: StackContext) -> Optional[TrainingPositions]:
        drawn = self._of_kind(TrainingPositions)  # at most one: they share a family
        return SCHEMES[drawn[0][0]](drawn[0][1], context) if drawn else None

    def build_input(self, context: StackContext) -> Optional[InputScheme]:
        inputs = self._of_kind(InputScheme)  # at most one: they share the "input" family
        return SCHEMES[inputs[0][0]](inputs[0][1], context) if inputs else None

    def build_attention_layers(self, context: StackContext) -> List[Optional[AttentionScheme]]:
        """Per layer: None, the one attention scheme, or a :class:`SchemeChain` of several."""
        attention = self._of_kind(AttentionScheme)
        if not attention:
            return [None] * context.num_layers
        per_scheme = {name: SCHEMES[name].build_layers(settings, context) for name, settings in attention}
        if len(per_scheme) == 1:
            return next(iter(per_scheme.values()))
        return [SchemeChain({name: layers[i] for name, layers in per_scheme.items()})
                for i in range(context.num_layers)]


FAMILY_WORDS = {
    "input": "input schemes (a stack has one)",
    "training_positions": "training positions (one rand says them all: rand:max=N,shift=K)",
    "shaw": "Shaw schemes (one of them, with its settings, says it)",
    "logit_transform": "multiplicative logit schemes (their order would be arbitrary)",
}


def _family_words(family: str) -> str:
    return FAMILY_WORDS.get(family, f"{family} schemes")


def _expected() -> str:
    return (f"schemes joined by '+' from {', '.join(sorted(SCHEMES))}, each optionally with "
            "settings as NAME:key=value,key=value")


def _move_settings(parts: List[str], option: str, text: str) -> List[str]:
    """``parts`` with each setting of :data:`MOVED_SETTINGS` moved to the scheme that has it
    now (dropped where it says that scheme's default)."""
    kept_parts, moved = [], {}
    for part in parts:
        name, colon, assignments = part.partition(":")
        kept = []
        for assignment in filter(None, (a.strip() for a in assignments.split(","))):
            key, _, raw = (s.strip() for s in assignment.partition("="))
            target = MOVED_SETTINGS.get((name.strip(), key))
            if target is None:
                kept.append(assignment)
                continue
            field = next(f for f in dataclasses.fields(SCHEMES[target].Settings) if f.name == key)
            if _convert(target, field, raw, option) != field.default:
                moved.setdefault(target, []).append(assignment)
        kept_parts.append(name + (colon + ",".join(kept) if kept else ""))
    for target, assignments in moved.items():
        if any(part.partition(":")[0].strip() == target for part in kept_parts):
            raise ValueError(f"{option}: {', '.join(assignments)} in {text!r} is {target}'s setting, and {target} is "
                             f"there too: say it once, as {target}:{','.join(assignments)}")
        kept_parts.append(f"{target}:{','.join(assignments)}")
    return kept_parts


def _parse_settings(scheme, assignments: str, option: str, legacy_defaults: Dict[str, Any]):
    fields = {field.name: field for field in dataclasses.fields(scheme.Settings)}
    values = {key: value for key, value in legacy_defaults.items() if key in fields}
    given = {}
    for assignment in filter(None, (a.strip() for a in assignments.split(","))):
        key, equals, raw = (s.strip() for s in assignment.partition("="))
        if key not in fields or not equals:
            raise ValueError(f"{option}: {scheme.name} has no setting {assignment!r}; it takes "
                             f"{settings_help(scheme.name)} (defaults shown), as {scheme.name}:key=value")
        if key in given:
            raise ValueError(f"{option}: {scheme.name} sets {key} twice ({given[key]!r} and {assignment!r}); "
                             "give each setting once")
        given[key] = assignment
        values[key] = _convert(scheme.name, fields[key], raw, option)
    try:
        return scheme.Settings(**values)
    except ValueError as error:
        raise ValueError(f"{option}: {scheme.name}: {error}") from None


def _convert(name: str, field, raw: str, option: str):
    kind = field.type
    optional = typing.get_origin(kind) is typing.Union and type(None) in typing.get_args(kind)
    if optional:
        if raw.lower() == "none":
            return None
        kind = next(arg for arg in typing.get_args(kind) if arg is not type(None))
    choices = field.metadata.get("choices")
    try:
        if kind is bool:
            if raw.lower() not in ("true", "false"):
                raise ValueError
            value = raw.lower() == "true"
        else:
            value = kind(raw)
        if kind is float and not math.isfinite(value):
            raise ValueError
    except ValueError:
        expected = {bool: "true or false", int: "an integer", float: "a finite number"}.get(kind, f"a {kind.__name__}")
        expected += " or none" if optional else ""
        raise ValueError(f"{option}: {name}:{field.name}={raw!r} is not {expected}") from None
    if choices and value not in choices:
        raise ValueError(f"{option}: {name}:{field.name}={raw!r}; expected one of {', '.join(choices)}")
    return value


def sharing(default: str, what: str):
    """A ``layers``/``heads`` sharing setting (Chen et al. 2021, §4.4.1)."""
    return dataclasses.field(default=default, metadata={"choices": ("separate", "shared"), "help": what})
