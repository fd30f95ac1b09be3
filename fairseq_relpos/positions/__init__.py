"""Position schemes and their registry.

A scheme is one module in this folder that registers itself::

    @register_scheme("shaw_k")
    class ...

Importing this package imports every module in it, so adding a scheme means adding one
file.  A position *spec* names what one stack uses: ``none``, one scheme, or an input
scheme plus an attention scheme joined by ``+`` (``abs+shaw``).
"""
import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Union

from .base import AttentionPositions, InputPositions, PositionContext

SchemeFactory = Callable[[PositionContext], Union[InputPositions, AttentionPositions]]

INPUT_SCHEMES: Dict[str, type] = {}
ATTENTION_SCHEMES: Dict[str, type] = {}
NO_POSITIONS = "none"


def register_scheme(name: str):
    """Class decorator: registers an InputPositions or AttentionPositions subclass."""

    def register(cls):
        if name in INPUT_SCHEMES or name in ATTENTION_SCHEMES or name == NO_POSITIONS:
            raise ValueError(f"position scheme {name!r} is registered twice")
        if issubclass(cls, InputPositions):
            INPUT_SCHEMES[name] = cls
        elif issubclass(cls, AttentionPositions):
            ATTENTION_SCHEMES[name] = cls
        else:
            raise TypeError(f"{cls.__name__} is neither InputPositions nor AttentionPositions")
        cls.scheme_name = name
        return cls

    return register


def scheme_names() -> List[str]:
    """Every single scheme name a spec may use, ``none`` first."""
    return [NO_POSITIONS] + sorted(INPUT_SCHEMES) + sorted(ATTENTION_SCHEMES)


@dataclass(frozen=True)
class PositionSpec:
    """An input scheme and an attention scheme, either of which may be absent."""

    input: Optional[str]
    attention: Optional[str]

    @classmethod
    def parse(cls, spec: str, option: str = "position spec") -> "PositionSpec":
        parts = [part.strip() for part in spec.split("+")]
        input_name = attention_name = None
        for part in parts:
            if part == NO_POSITIONS and len(parts) == 1:
                continue
            if part in INPUT_SCHEMES and input_name is None:
                input_name = part
            elif part in ATTENTION_SCHEMES and attention_name is None:
                attention_name = part
            else:
                raise ValueError(
                    f"{option}: cannot use {part!r} in {spec!r}; expected 'none', one of "
                    f"{', '.join(scheme_names()[1:])}, or an input scheme "
                    f"({', '.join(sorted(INPUT_SCHEMES))}) '+' an attention scheme "
                    f"({', '.join(sorted(ATTENTION_SCHEMES))})"
                )
        return cls(input_name, attention_name)

    def __str__(self):
        return "+".join(name for name in (self.input, self.attention) if name) or NO_POSITIONS

    def build_input(self, context: PositionContext) -> Optional[InputPositions]:
        return INPUT_SCHEMES[self.input](context) if self.input else None

    def build_attention_layers(self, context: PositionContext) -> List[Optional[AttentionPositions]]:
        if self.attention is None:
            return [None] * context.num_layers
        return ATTENTION_SCHEMES[self.attention].build_layers(context)


for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")
