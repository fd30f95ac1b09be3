"""Oracle-length decoding (Newman et al. 2020, "The EOS Decision and Length Extrapolation"):
each sentence is decoded with its reference's length in target subword tokens, end of
sentence forbidden before it and forced at it, beam search otherwise unchanged.  What a model
still gets wrong then is not its decision to stop.

From the command line, the plugin's translation task takes the option::

    fairseq-generate DATA --user-dir fairseq_relpos --task relpos_translation --oracle-length \\
        --path checkpoint_best.pt --beam 5 ...

(the references are the test set's target side).  From the hub, give the lengths::

    from fairseq_relpos.oracle_length import reference_lengths, with_oracle_length
    hub = RelPosTransformerModel.from_pretrained(...)
    oracle = with_oracle_length(hub)
    oracle.translate(sources, beam=5, oracle_lengths=reference_lengths(hub, references))

``relpos_translation`` is fairseq's ``translation`` task with this one option added: it
trains, validates and generates as ``translation`` does, and a checkpoint trained with
either task decodes with either.  docs/plugin.md describes it.
"""
import math
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

import torch
from fairseq.hub_utils import GeneratorHubInterface
from fairseq.sequence_generator import EnsembleModel, SequenceGenerator
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

TASK = "relpos_translation"


class _LengthMaskedEnsemble(EnsembleModel):
    """fairseq's ensemble whose next-token log-probabilities allow end of sentence only at
    each hypothesis's oracle length: before it, EOS is -inf; at it, every other token is.

    ``row_lengths`` holds the oracle length of each row the generator decodes, in the
    batch's order; the generator reorders its rows (beams, finished sentences dropped) only
    through ``reorder_encoder_out``, which reorders the lengths with them."""

    def __init__(self, models, eos: int):
        super().__init__(models)
        self.eos = eos
        self.row_lengths: Optional[torch.Tensor] = None

    def reorder_encoder_out(self, encoder_outs, new_order):
        self.row_lengths = self.row_lengths.index_select(0, new_order.to(self.row_lengths.device))
        return super().reorder_encoder_out(encoder_outs, new_order)

    def forward_decoder(self, tokens, encoder_outs, incremental_states, temperature: float = 1.0):
        lprobs, attn = super().forward_decoder(tokens, encoder_outs, incremental_states, temperature)
        step = tokens.size(1) - 1  # output tokens so far
        lengths = self.row_lengths.to(lprobs.device)
        lprobs[lengths > step, self.eos] = -math.inf
        at_length = lengths == step
        eos_scores = lprobs[at_length, self.eos]
        lprobs[at_length] = -math.inf
        lprobs[at_length, self.eos] = eos_scores
        return lprobs, attn


class OracleLengthGenerator(SequenceGenerator):
    """fairseq's SequenceGenerator (beam search or any search it is given) that ends every
    hypothesis of a sentence at the sentence's oracle length.

    The lengths come from ``oracle_lengths`` (one per sentence id, as the hub numbers its
    inputs) or, without it, from each sample's target: its tokens other than padding and
    the final EOS.  The oracle sets the length, so --min-len, --max-len-a and --max-len-b
    play no part; a length beyond what the model can decode is refused."""

    def __init__(self, models, tgt_dict, oracle_lengths: Optional[Sequence[int]] = None, **kwargs):
        if kwargs.get("match_source_len"):
            raise ValueError("--oracle-length sets each output's length: drop --match-source-len")
        eos = tgt_dict.eos() if kwargs.get("eos") is None else kwargs["eos"]
        # min_len 0: an empty reference's oracle output is EOS at the first step
        super().__init__(_LengthMaskedEnsemble(models, eos), tgt_dict, **{**kwargs, "min_len": 0})
        if oracle_lengths is not None:
            oracle_lengths = [int(length) for length in oracle_lengths]
            if any(length < 0 for length in oracle_lengths):
                raise ValueError(f"oracle lengths must be >= 0, got {min(oracle_lengths)}")
        self.oracle_lengths = oracle_lengths

    @torch.no_grad()
    def generate(self, models, sample, **kwargs):
        lengths = self._sentence_lengths(sample)
        longest = int(lengths.max()) if lengths.numel() else 0
        if longest > self.max_len - 1:
            raise ValueError(f"an oracle length of {longest} tokens is beyond the {self.max_len - 1} the model "
                             "can decode (its decoder's positions)")
        self.model.row_lengths = lengths
        # the buffers of _generate hold max_len_a * source length + max_len_b steps
        self.max_len_a, self.max_len_b = 0, longest
        return self._generate(sample, **kwargs)

    def is_finished(self, step: int, unfin_idx: int, max_len: int, finalized_sent_len: int, beam_size: int):
        """A sentence is also finished at its oracle length: it has every hypothesis it will
        get, which is fewer than the beam where fewer prefixes are possible (an empty
        reference's sentence has one, the empty output).  The rows are the current batch's,
        a sentence's beam together, so its first row has its length."""
        at_length = int(self.model.row_lengths[unfin_idx * beam_size]) <= step
        return at_length or super().is_finished(step, unfin_idx, max_len, finalized_sent_len, beam_size)

    def _sentence_lengths(self, sample) -> torch.Tensor:
        src_tokens = sample["net_input"]["src_tokens"]
        if self.oracle_lengths is not None:
            if "id" not in sample:
                raise ValueError("oracle lengths are given per sentence id, and the sample has no ids")
            ids = sample["id"].tolist()
            beyond = [i for i in ids if not 0 <= i < len(self.oracle_lengths)]
            if beyond:
                raise ValueError(f"{len(self.oracle_lengths)} oracle lengths, and a sentence with id {beyond[0]}: "
                                 "give one length per input sentence")
            return torch.tensor([self.oracle_lengths[i] for i in ids], device=src_tokens.device)
        target = sample.get("target")
        if target is None:
            raise ValueError("oracle-length decoding needs each sentence's reference (the test set's target "
                             "side) or its length (oracle_lengths); this input has neither")
        return (target.ne(self.pad) & target.ne(self.eos)).sum(dim=1)


@dataclass
class RelPosTranslationConfig(TranslationConfig):
    oracle_length: bool = field(
        default=False,
        metadata={"help": "decode each sentence with its reference's length in target subword tokens (end of "
                          "sentence forbidden before it and forced at it; Newman et al. 2020): the test set's "
                          "target side gives the lengths"},
    )


@register_task(TASK, dataclass=RelPosTranslationConfig)
class RelPosTranslationTask(TranslationTask):
    """fairseq's translation task with the plugin's generation options (--oracle-length)."""

    def build_generator(self, models, args, seq_gen_cls=None, extra_gen_cls_kwargs=None,
                        prefix_allowed_tokens_fn=None):
        oracle_lengths = getattr(args, "oracle_lengths", None)  # the hub's, one per sentence
        if not (getattr(self.cfg, "oracle_length", False) or oracle_lengths is not None):
            return super().build_generator(models, args, seq_gen_cls, extra_gen_cls_kwargs,
                                           prefix_allowed_tokens_fn)
        for option in ("score_reference", "print_alignment"):
            if getattr(args, option, None):
                raise ValueError(f"--oracle-length decodes; it cannot be combined with --{option.replace('_', '-')}")
        if seq_gen_cls is not None:
            raise ValueError(f"--oracle-length brings its own generator; {seq_gen_cls.__name__} was asked for")
        extra = {**(extra_gen_cls_kwargs or {}),
                 "oracle_lengths": None if oracle_lengths is None else list(oracle_lengths)}
        return super().build_generator(models, args, OracleLengthGenerator, extra, prefix_allowed_tokens_fn)


def with_oracle_length(hub: GeneratorHubInterface) -> GeneratorHubInterface:
    """A hub interface over ``hub``'s models whose ``translate``, ``sample`` and ``generate``
    take ``oracle_lengths=[...]``, one length per input sentence (without it they decode as
    ``hub`` does)."""
    task = RelPosTranslationTask(hub.task.cfg, hub.task.source_dictionary, hub.task.target_dictionary)
    return GeneratorHubInterface(hub.cfg, task, list(hub.models))


def reference_lengths(hub: GeneratorHubInterface, references: Sequence[str]) -> List[int]:
    """Each reference's length in the model's target subword tokens (as ``hub`` encodes
    text: its tokenizer and BPE, without the EOS it appends)."""
    eos = hub.tgt_dict.eos()
    return [int(hub.tgt_dict.encode_line(hub.apply_bpe(hub.tokenize(reference)), add_if_not_exist=False,
                                        append_eos=False).ne(eos).sum())
            for reference in references]
