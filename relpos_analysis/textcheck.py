"""What the text itself says about how it can be scored and measured.

Two mistakes give a number without any error: hypotheses still split into subwords
(BLEU 2.8 instead of 76.5 on the same translations), and text written without spaces
between words (Chinese, Japanese, Thai, ...) measured in whitespace tokens (every sentence
one "word": length 1, BLEU 0 with the 13a tokenizer).  These checks catch both.
"""
import html
import re
from typing import Optional, Sequence

from .io import InputError

# subword-nmt's continuation marker ("@@ " inside a line, "@@" at its end) ends a subword,
# so it follows a character other than a space or "@" ("@@" after a space is text: a
# literal "@" token joined to the next by its own marker leaves one); and SentencePiece's
# word-start marker U+2581, which ordinary text never contains.
_SUBWORD_MARKERS = {
    "BPE ('@@ ')": (
        re.compile(r"(?<=[^\s@])@@( |$)"),
        "undo the BPE first (fairseq-generate --remove-bpe, or sed -r 's/(@@ )|(@@ ?$)//g')",
    ),
    "SentencePiece ('\u2581')": (
        re.compile("\u2581"),
        "decode the pieces first (fairseq-generate --remove-bpe sentencepiece, or spm_decode)",
    ),
}
# A stray marker should not stop a report: real text has them ("mail me @@ home"), and so has
# the output of an undertrained model that writes BPE's "@" pieces ("k@s@@"); segmented
# output has one on most lines.
_MARKED_SHARE = 0.05
_MARKED_LINES = 2

# Scripts written without spaces between words: Thai, Lao, Myanmar, Khmer, kana, Han.
_UNSPACED_CHAR = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\U00020000-\U0002ffff]"
)
# Segmented Chinese or Japanese averages under 2 characters per token (words or subword
# pieces); unsegmented text has whole clauses between spaces.
_MAX_SEGMENTED_CHARS_PER_TOKEN = 4.0


def check_no_subword_markers(path, lines: Sequence[str]) -> None:
    """Refuse text that still carries subword markers on more than a stray line."""
    for name, (marker, fix) in _SUBWORD_MARKERS.items():
        marked = sum(1 for line in lines if marker.search(line))
        if marked and (marked == len(lines) or marked >= max(_MARKED_LINES, _MARKED_SHARE * len(lines))):
            raise InputError(
                f"{path}: {marked} of {len(lines)} lines still carry {name} subword markers, "
                f"so every split word would count as a mismatch: {fix}; "
                "or pass --allow-subwords to score the text as it is"
            )


def unsegmented_chars_per_token(lines: Sequence[str]) -> Optional[float]:
    """Characters per whitespace token if ``lines`` look like a script written without
    spaces between words (most characters Han, kana, Thai, ... and long tokens); else None."""
    text = "".join("".join(line.split()) for line in lines)
    tokens = sum(len(line.split()) for line in lines)
    if not text or len(_UNSPACED_CHAR.findall(text)) * 2 < len(text):
        return None
    chars_per_token = len(text) / tokens
    return chars_per_token if chars_per_token > _MAX_SEGMENTED_CHARS_PER_TOKEN else None


def check_segmented(path, lines: Sequence[str], fix: str) -> None:
    """Refuse to count whitespace tokens of unsegmented Chinese, Japanese, Thai, ... text."""
    chars_per_token = unsegmented_chars_per_token(lines)
    if chars_per_token is not None:
        raise InputError(
            f"{path} looks like text written without spaces between words (Chinese, "
            f"Japanese, Thai, ...: {chars_per_token:.1f} characters per whitespace token): {fix}"
        )


# a translation's segmented form given for its lengths (--system-lengths) belongs to it when
# its letters and digits are the translation's, line by line: undoing the segmentation (BPE's
# "@@ ", SentencePiece's pieces) and the tokenisation (spaces, Moses' XML escapes such as
# "&apos;") changes none of them.  A few lines may differ (a detokeniser's quirk); another
# system's translations differ on most.
_FOREIGN_SHARE = 0.05
_FOREIGN_LINES = 2


def _letters(line: str) -> str:
    return "".join(c for c in html.unescape(line) if c.isalnum())


def check_segmented_form(path, segmented: Sequence[str], text_path, text: Sequence[str], option: str) -> None:
    """Refuse ``segmented`` (``option``'s file ``path``) as the segmented form of the
    translations ``text`` (from ``text_path``) where its lines say other words."""
    differing = [k for k, (seg, line) in enumerate(zip(segmented, text)) if _letters(seg) != _letters(line)]
    if differing and (len(differing) == len(text) or len(differing) > max(_FOREIGN_LINES, _FOREIGN_SHARE * len(text))):
        first = differing[0]
        raise InputError(
            f"{option} {path}: {len(differing)} of {len(text)} lines are not the segmented form of the "
            f"translations in {text_path} (line {first + 1}: {segmented[first][:60]!r} against "
            f"{text[first][:60]!r}): give the segmented form of these translations (the translate tool's hyp.seg "
            "beside its hyp.txt)"
        )
