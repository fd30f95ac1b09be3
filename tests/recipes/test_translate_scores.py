"""The translate tool's hyp.scores: each best hypothesis's mean log2-probability per token,
from fairseq-generate's P- lines, in source order (relpos_analysis.io.fairseq_log_probs)."""
import pytest

from relpos_analysis.io import InputError, fairseq_log_probs
from relpos_recipes.tools.fairseq_generate import write_scores

# fairseq-generate's order: batches sorted by length; per id S-, T-, then H-, D-, P- of each
# of the --nbest hypotheses, best first.  H- is the P- line's sum over its count (--lenpen 1).
LOG = """S-1\tb c
T-1\tB C
H-1\t-0.5\tC B
D-1\t-0.5\tC B
P-1\t-0.2500 -0.7500 -0.5000
H-1\t-0.9\tC
D-1\t-0.9\tC
P-1\t-1.0000 -0.8000
S-0\ta
T-0\tA
H-0\t-2.0\t
D-0\t-2.0\t
P-0\t-2.0000
"""


def test_scores_are_the_mean_of_the_best_hypothesis_p_line_in_source_order(tmp_path):
    log, out = tmp_path / "generate.log", tmp_path / "hyp.scores"
    log.write_text(LOG)
    write_scores(log, 2, out)
    # the empty hypothesis has its end of sentence; the second hypothesis of id 1 is ignored
    assert out.read_text() == "-2.000000\n-0.500000\n"


def test_a_missing_or_damaged_p_line_is_refused(tmp_path):
    log, out = tmp_path / "generate.log", tmp_path / "hyp.scores"
    log.write_text(LOG)
    with pytest.raises(SystemExit, match=r"no token scores for 1 of 3 sentences \(ids \[2\]\)"):
        write_scores(log, 3, out)
    assert not out.exists()
    with pytest.raises(InputError, match="P- line of sentence 0 holds something other than numbers"):
        fairseq_log_probs(["P-0\t-0.1 x"], "generate.log")
    with pytest.raises(InputError, match="has no P- lines"):
        fairseq_log_probs(["H-0\t-0.1\tx"], "generate.log")
