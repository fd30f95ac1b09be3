"""Several attention schemes in one layer, as one scheme."""
import functools
import operator
from typing import List, Mapping, Optional

from torch import nn

from .base import AttentionScheme, ScoreTerm


class SchemeChain(AttentionScheme):
    """Several attention schemes in one layer: rotations and logit transforms apply in the
    spec's order, biases and value terms add up, logit scales multiply."""

    name = "+"

    def __init__(self, schemes: Mapping[str, AttentionScheme]):
        nn.Module.__init__(self)
        self.schemes = nn.ModuleDict(schemes)
        # the chain overrides every method: what it can do is what its members can
        self.transforms_logits = any(s.transforms_logits for s in self.schemes.values())
        self.has_value_term = any(s.has_value_term for s in self.schemes.values())
        self.flex_covered = all(s.flex_covered for s in self.schemes.values())

    def max_positions(self) -> Optional[int]:
        limits = [scheme.max_positions() for scheme in self.schemes.values()]
        return min((limit for limit in limits if limit is not None), default=None)

    def length_edges(self) -> List[int]:
        return sorted({edge for scheme in self.schemes.values() for edge in scheme.length_edges()})

    def rotate(self, x, span):
        for scheme in self.schemes.values():
            x = scheme.rotate(x, span)
        return x

    def transform_logits(self, logits, q, k, span):
        for scheme in self.schemes.values():
            logits = scheme.transform_logits(logits, q, k, span)
        return logits

    def logit_bias(self, q, k, span):
        return _sum(scheme.logit_bias(q, k, span) for scheme in self.schemes.values())

    def logit_scale(self, span):
        return _product(scheme.logit_scale(span) for scheme in self.schemes.values())

    def value_term(self, probs, span):
        return _sum(scheme.value_term(probs, span) for scheme in self.schemes.values())

    def flex_bias(self, q, k, span):
        return _combined_terms([scheme.flex_bias(q, k, span) for scheme in self.schemes.values()], operator.add)

    def flex_factor(self, span):
        return _combined_terms([scheme.flex_factor(span) for scheme in self.schemes.values()], operator.mul)

    def extra_repr(self) -> str:
        return ""


def _sum(terms):
    return _combine(terms, operator.add)


def _product(factors):
    return _combine(factors, operator.mul)


def _combined_terms(terms: List[Optional[ScoreTerm]], combine) -> Optional[ScoreTerm]:
    """The kernel terms of several schemes as one (their sum or product)."""
    terms = [term for term in terms if term is not None]
    if len(terms) <= 1:
        return terms[0] if terms else None
    return lambda b, h, q_idx, kv_idx: functools.reduce(combine, (term(b, h, q_idx, kv_idx) for term in terms))


def _combine(terms, combine):
    total = None
    for term in terms:
        if term is not None:
            total = term if total is None else combine(total, term)
    return total
