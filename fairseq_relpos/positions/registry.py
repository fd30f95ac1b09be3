"""The registry of position schemes: each scheme module registers its class under the name
a position spec calls it by."""
import dataclasses
from typing import Dict, List

from .base import AttentionScheme, InputScheme, TrainingPositions

SCHEMES: Dict[str, type] = {}
NO_POSITIONS = "none"
SCHEME_KINDS = (TrainingPositions, InputScheme, AttentionScheme)


def register_scheme(name: str):
    """Class decorator: registers an InputScheme, AttentionScheme or TrainingPositions
    subclass under ``name``."""

    def register(cls):
        if name in SCHEMES or name == NO_POSITIONS:
            raise ValueError(f"position scheme {name!r} is registered twice")
        if not issubclass(cls, SCHEME_KINDS):
            raise TypeError(f"{cls.__name__} is none of {', '.join(kind.__name__ for kind in SCHEME_KINDS)}")
        if cls.applies_across and not issubclass(cls, AttentionScheme):
            raise TypeError(f"{cls.__name__} sets applies_across, which only an AttentionScheme can: encoder-decoder "
                            "attention has no input or training positions of its own")
        SCHEMES[name] = cls
        cls.name = name
        return cls

    return register


def scheme_names() -> List[str]:
    """Every scheme name a spec may use, ``none`` first."""
    return [NO_POSITIONS] + sorted(SCHEMES)


def settings_help(name: str) -> str:
    """``key=default, …`` of a scheme's settings, for messages and ``--help``."""
    fields = dataclasses.fields(SCHEMES[name].Settings)
    return ", ".join(f"{f.name}={_default_text(f)}" for f in fields) or "no settings"


def _default_text(field) -> str:
    value = field.default
    return str(value).lower() if isinstance(value, bool) or value is None else str(value)
