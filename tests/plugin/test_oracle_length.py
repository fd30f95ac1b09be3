"""Oracle-length decoding (fairseq_relpos.oracle_length) on every architecture: each output
has exactly its reference's length, beam 1 at greedy decoding's own lengths is greedy
decoding, cached decoding equals full decoding; and through fairseq-generate and the hub."""
import pytest
import torch
from fairseq.sequence_generator import SequenceGenerator

from fairseq_relpos import ARCHITECTURES
from fairseq_relpos.oracle_length import OracleLengthGenerator, reference_lengths, with_oracle_length
from relpos_analysis.io import fairseq_log_probs

from conftest import TINY_TRAIN_ARGS, build_tiny_model, fairseq, fairseq_in_process, tiny_dictionary
from test_model_invariants import random_tokens

ARCHS = sorted(ARCHITECTURES)
# an empty reference, a short and a long one (longer than every source)
TARGET_LENGTHS = [0, 3, 14]
SOURCE_LENGTHS = [6, 9, 4]


@pytest.fixture(scope="module")
def dictionary():
    return tiny_dictionary()


def sample_with_targets(dictionary, target_lengths=TARGET_LENGTHS):
    """A batch as fairseq's translation task makes it: left-padded sources, right-padded
    targets ending in EOS (``target_lengths`` words each), and the sentence ids."""
    src = random_tokens(dictionary, SOURCE_LENGTHS, left_pad=True)
    target = random_tokens(dictionary, [length + 1 for length in target_lengths], left_pad=False, seed=3)
    return {"id": torch.tensor([2, 0, 1]), "target": target,
            "net_input": {"src_tokens": src, "src_lengths": src.ne(dictionary.pad()).sum(1)}}


def output_lengths(hypotheses, eos):
    """Each hypothesis's tokens before its EOS, per sentence; every hypothesis must end in its
    only EOS."""
    lengths = []
    for beams in hypotheses:
        for hypo in beams:
            tokens = hypo["tokens"].tolist()
            assert tokens[-1] == eos and eos not in tokens[:-1]
        lengths.append([len(hypo["tokens"]) - 1 for hypo in beams])
    return lengths


@pytest.mark.parametrize("arch", ARCHS)
def test_every_hypothesis_has_its_references_length(arch, dictionary):
    model = build_tiny_model(arch, dictionary)
    generator = OracleLengthGenerator([model], dictionary, beam_size=4)
    hypotheses = generator.generate([model], sample_with_targets(dictionary))
    # an empty reference has one possible output, the others a full beam of their length
    assert output_lengths(hypotheses, dictionary.eos()) == [[0], [3] * 4, [14] * 4]


@pytest.mark.parametrize("arch", ARCHS)
def test_beam_one_at_greedy_lengths_is_greedy_decoding(arch, dictionary):
    model = build_tiny_model(arch, dictionary)
    sample = sample_with_targets(dictionary)
    greedy = SequenceGenerator([model], dictionary, beam_size=1, max_len_b=16).generate([model], sample)
    ids = sample["id"].tolist()
    lengths = [0] * len(ids)
    for sentence_id, beams in zip(ids, greedy):
        lengths[sentence_id] = len(beams[0]["tokens"]) - 1
    oracle = OracleLengthGenerator([model], dictionary, beam_size=1, oracle_lengths=lengths).generate([model], sample)
    for free, forced in zip(greedy, oracle):
        assert forced[0]["tokens"].tolist() == free[0]["tokens"].tolist()
        torch.testing.assert_close(forced[0]["positional_scores"], free[0]["positional_scores"])


@pytest.mark.parametrize("arch", ARCHS)
def test_cached_decoding_equals_full_decoding(arch, dictionary):
    model = build_tiny_model(arch, dictionary)
    sample = sample_with_targets(dictionary)
    outputs = []
    for cached in (True, False):
        generator = OracleLengthGenerator([model], dictionary, beam_size=3)
        generator.model.has_incremental = cached  # False: the whole prefix at every step
        outputs.append(generator.generate([model], sample))
    for cached, full in zip(*outputs):
        assert [h["tokens"].tolist() for h in cached] == [h["tokens"].tolist() for h in full]
        for a, b in zip(cached, full):
            torch.testing.assert_close(a["positional_scores"], b["positional_scores"], atol=1e-4, rtol=1e-4)


def test_lengths_are_refused_clearly(dictionary):
    model = build_tiny_model("transformer_abs_learned", dictionary, max_target_positions=16)
    sample = sample_with_targets(dictionary, [2, 3, 20])
    with pytest.raises(ValueError, match="oracle length of 20 tokens is beyond the 15"):
        OracleLengthGenerator([model], dictionary).generate([model], sample)
    del sample["target"]
    with pytest.raises(ValueError, match="needs each sentence's reference"):
        OracleLengthGenerator([model], dictionary).generate([model], sample)
    with pytest.raises(ValueError, match="3 oracle lengths, and a sentence with id 3"):
        OracleLengthGenerator([model], dictionary, oracle_lengths=[1, 2, 3]).generate(
            [model], {**sample, "id": torch.tensor([3, 0, 1])})
    with pytest.raises(ValueError, match="drop --match-source-len"):
        OracleLengthGenerator([model], dictionary, match_source_len=True)


def test_fairseq_generate_and_the_hub(reversal_data_bin, tmp_path):
    """One real fairseq-generate run with --task relpos_translation --oracle-length: every
    hypothesis has its reference's length; without --oracle-length the task decodes as
    translation does (both in this process, through fairseq-generate's cli_main); the hub's
    oracle lengths likewise."""
    fairseq_in_process("fairseq-train", reversal_data_bin, "--user-dir", "fairseq_relpos", "--arch", "transformer_rel",
                       *TINY_TRAIN_ARGS, "--max-update", 30, "--save-dir", tmp_path, "--cpu")
    common = [reversal_data_bin, "--user-dir", "fairseq_relpos", "--path", tmp_path / "checkpoint_last.pt",
              "--beam", 4, "--batch-size", 16, "--cpu", "--task", "relpos_translation"]
    oracle = fairseq("fairseq-generate", *common, "--oracle-length").stdout
    free = fairseq_in_process("fairseq-generate", *common)
    stock = fairseq_in_process("fairseq-generate", *[a if a != "relpos_translation" else "translation" for a in common])

    def column(output, tag):
        lines = [line.split("\t") for line in output.splitlines() if line.startswith(f"{tag}-")]
        return {int(parts[0][2:]): parts[-1] for parts in lines}

    references, hypotheses = column(oracle, "T"), column(oracle, "H")
    assert len(hypotheses) == 40
    assert all(len(hypotheses[i].split()) == len(references[i].split()) for i in references)
    assert column(free, "H") == column(stock, "H")
    assert column(free, "H") != hypotheses  # 30 updates: the free lengths are not all right
    # hyp.scores' numbers (the P- lines' means) are the H- scores at the default --lenpen 1
    h_scores = [float(line.split("\t")[1]) for line in sorted(
        (line for line in oracle.splitlines() if line.startswith("H-")), key=lambda line: int(line[2:].split("\t")[0]))]
    assert fairseq_log_probs(oracle.splitlines(), "generate.log") == pytest.approx(h_scores, abs=1e-4)

    from fairseq_relpos import RelPosTransformerModel

    hub = RelPosTransformerModel.from_pretrained(str(tmp_path), checkpoint_file="checkpoint_last.pt",
                                                 data_name_or_path=str(reversal_data_bin),
                                                 source_lang="src", target_lang="tgt")
    sources = ["w1 w2 w3", "w4 w5 w6 w7 w8"]
    targets = ["W3 W2 W1 W1 W1 W1", "W8"]
    lengths = reference_lengths(hub, targets)
    assert lengths == [6, 1]
    translations = with_oracle_length(hub).translate(sources, beam=4, oracle_lengths=lengths)
    assert [len(t.split()) for t in translations] == lengths
    assert with_oracle_length(hub).translate(sources, beam=4) == hub.translate(sources, beam=4)
