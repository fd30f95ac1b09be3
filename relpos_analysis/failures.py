"""How a translation fails, sentence by sentence: empty, much shorter than its reference,
or looping; and, given fairseq-generate's scores, how probable the model found it.

Each failure is a flag per sentence (0 or 100, so that a set's mean is its share in percent)
and a set's value is the mean, scored, resampled and tested as a metric computed elsewhere
is (relpos_analysis.metrics.SegmentMean).  The three flags are exclusive, in this order, so
that their shares add up to the share of sentences that failed in any of these ways:

- ``empty``: the translation has no token;
- ``short``: not empty, and fewer tokens than ``short_ratio`` (default 0.5) times its
  reference's: it stopped early, or dropped part of the sentence;
- ``loop``: neither, and it repeats an n-gram of up to ``LOOP_MAX_N`` (4) tokens at least
  ``LOOP_MIN_REPEATS`` (3) times in a row ("a b a b a b"), more times in a row than its
  reference repeats any n-gram (so that a reference's own "ha ha ha" is no failure).

Tokens are those of the report's BLEU tokenizer (sacrebleu's, with its options: ``13a``,
``none`` for tokenized text, ``zh``, ...), and the reference is the first one.  ``logprob``
is each translation's mean log2-probability per token, its end of sentence included, as the
translate tool keeps it (relpos_analysis.io.fairseq_log_probs).  docs/analysis.md gives the
sources: Newman et al. (2020) and Variš and Bojar (2021) on stopping and length, Guerreiro
et al. (2023) on repetitions and the sequence log-probability as signs of hallucination.
"""
from typing import Dict, List, Sequence, Tuple

FAILURES = ("empty", "short", "loop")
LOG_PROB = "logprob"
DISPLAY_NAMES = {"empty": "empty %", "short": "short %", "loop": "loop %", LOG_PROB: "log2 p/token"}
SHORT_RATIO = 0.5
LOOP_MAX_N = 4
LOOP_MIN_REPEATS = 3
FLAG = 100.0  # a flagged sentence's value: a set's mean is its share in percent


def longest_repeat(tokens: Sequence[str], max_n: int = LOOP_MAX_N) -> int:
    """The most copies of one n-gram (n <= ``max_n``) that follow each other ("a b a b a b
    c" -> 3, "a a b" -> 2); 1 when nothing repeats, 0 for no token."""
    longest = 1 if tokens else 0
    for n in range(1, max_n + 1):
        # ``matched`` tokens in a row equal the token n before them: the n + matched tokens
        # ending here repeat one n-gram, (n + matched) // n whole copies of it
        matched = 0
        for position in range(n, len(tokens)):
            matched = matched + 1 if tokens[position] == tokens[position - n] else 0
            longest = max(longest, (n + matched) // n)
    return longest


def classify(hypothesis: Sequence[str], reference: Sequence[str], short_ratio: float = SHORT_RATIO) -> str:
    """The failure of one tokenized translation ("empty", "short", "loop"), or "" for none."""
    if not hypothesis:
        return "empty"
    if len(hypothesis) < short_ratio * len(reference):
        return "short"
    repeats = longest_repeat(hypothesis)
    if repeats >= LOOP_MIN_REPEATS and repeats > longest_repeat(reference):
        return "loop"
    return ""


def failure_flags(hypotheses: Sequence[Sequence[str]], references: Sequence[Sequence[str]],
                  short_ratio: float = SHORT_RATIO) -> Dict[str, List[float]]:
    """failure -> each sentence's flag (FLAG or 0), from tokenized translations and references."""
    kinds = [classify(hyp, ref, short_ratio) for hyp, ref in zip(hypotheses, references)]
    return {failure: [FLAG if kind == failure else 0.0 for kind in kinds] for failure in FAILURES}


def description(metric: str, tokenizer: str, short_ratio: float) -> Tuple[str, ...]:
    """What a failure column counts, as its signature shows it (metrics.SegmentMean)."""
    what = {
        "empty": "share:no token",
        "short": f"share:not empty, below {short_ratio:g} x the reference's tokens",
        "loop": f"share:neither, an n-gram (n<={LOOP_MAX_N}) repeated >={LOOP_MIN_REPEATS} times in a row, "
                "more than in the reference",
        LOG_PROB: "mean:log2 probability per token, end of sentence included",
    }[metric]
    return (what,) + ((f"tok:{tokenizer}",) if metric != LOG_PROB else ())
