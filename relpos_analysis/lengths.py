"""Sentence lengths J for bucketing.

The study counts subword tokens of the segmented source.  Given already segmented text,
whitespace tokens are those subwords; raw text can be segmented here with the BPE codes
(subword-nmt) or the SentencePiece model the system was trained with, or measured in
characters.
"""
from typing import List, Sequence

from .io import InputError, existing_file


def whitespace_lengths(lines: Sequence[str]) -> List[int]:
    return [len(line.split()) for line in lines]


def char_lengths(lines: Sequence[str]) -> List[int]:
    """Characters other than whitespace: a length for text written without spaces between
    words (Chinese, Japanese, Thai) when no segmentation model is at hand."""
    return [len("".join(line.split())) for line in lines]


def bpe_lengths(lines: Sequence[str], codes_path) -> List[int]:
    """Subword count after applying subword-nmt BPE codes to whitespace-tokenized text."""
    from subword_nmt.apply_bpe import BPE

    codes_path = existing_file(codes_path)
    try:
        with open(codes_path, encoding="utf-8") as codes:
            bpe = BPE(codes)
    except (ValueError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read BPE codes {codes_path}: {err}") from None
    return whitespace_lengths([bpe.process_line(line) for line in lines])


def sentencepiece_lengths(lines: Sequence[str], model_path) -> List[int]:
    """Number of SentencePiece pieces of each raw sentence."""
    import sentencepiece

    model_path = existing_file(model_path)
    try:
        processor = sentencepiece.SentencePieceProcessor(model_file=str(model_path))
    except (OSError, RuntimeError) as err:
        raise InputError(f"cannot load SentencePiece model {model_path}: {err}") from None
    return [len(pieces) for pieces in processor.encode(list(lines), out_type=str)]
