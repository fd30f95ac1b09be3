"""What the SLURM launcher says, without a cluster: what became of the jobs it cancelled
(tests/cluster/test_slurm_runner.py checks the same on a real cluster)."""
from relpos_recipes.engine.slurm import CANCEL_SECONDS, cancellation


def test_a_cancellation_says_which_jobs_it_cancelled_which_had_ended_and_which_it_could_not():
    states = {"70": "CANCELLED", "71": "COMPLETED", "72": "RUNNING", "73": "COMPLETING", "74": "COMPLETING"}
    refused = {"71": "Job/step already completing or completed", "72": "Access/permission denied",
               "74": "Job/step already completing or completed"}
    assert cancellation(states, refused) == (
        "2 were cancelled (70, 73 (its processes still ending)), 2 had already ended (71 COMPLETED, 74 COMPLETING), "
        f"1 could not be cancelled (72: still RUNNING {CANCEL_SECONDS} s after scancel; scancel: Access/permission "
        "denied): cancel them with scancel 72")
    assert cancellation({"70": "CANCELLED", "71": "CANCELLED"}, {}) == "2 were cancelled (70, 71)"
