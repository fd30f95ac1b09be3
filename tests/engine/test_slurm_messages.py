"""What the SLURM launcher says, without a cluster: what became of the jobs it cancelled, what
an interrupted --wait leaves running, and a step's reason where no SLURM answers
(tests/cluster/test_slurm_runner.py checks the same on a real cluster)."""
from relpos_recipes.engine import Step, manifest, unfinished
from relpos_recipes.engine.slurm import CANCEL_SECONDS, cancellation, left_running


def test_a_cancellation_says_which_jobs_it_cancelled_which_had_ended_and_which_it_could_not():
    states = {"70": "CANCELLED", "71": "COMPLETED", "72": "RUNNING", "73": "COMPLETING", "74": "COMPLETING"}
    refused = {"71": "Job/step already completing or completed", "72": "Access/permission denied",
               "74": "Job/step already completing or completed"}
    assert cancellation(states, refused) == (
        "2 were cancelled (70, 73 (its processes still ending)), 2 had already ended (71 COMPLETED, 74 COMPLETING), "
        f"1 could not be cancelled (72: still RUNNING {CANCEL_SECONDS} s after scancel; scancel: Access/permission "
        "denied): cancel them with scancel 72")
    assert cancellation({"70": "CANCELLED", "71": "CANCELLED"}, {}) == "2 were cancelled (70, 71)"
    assert cancellation({"70": "CANCELLED"}, {}) == "1 was cancelled (70)"


def test_an_interrupted_wait_says_the_jobs_go_on_and_how_to_follow_or_cancel_them():
    assert left_running(["70", "71"]) == (
        "stopped waiting, but the 2 SLURM job(s) go on (70, 71): follow them with squeue -j 70,71; cancel them "
        "with scancel 70 71; a re-run with --wait waits for them again")
    assert left_running([]) == "stopped waiting; SLURM listed none of the jobs as queued or running any more"


def test_a_step_of_a_slurm_job_keeps_its_own_reason_where_no_slurm_answers(tmp_path, monkeypatch):
    """A folder a cluster's job wrote, read where there is no SLURM (a copy on a laptop)."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no scontrol
    step = Step("train", ["true"], home=tmp_path)
    manifest.write(step.manifest_path, manifest.Record(step="train", status="failed", command=["true"], identity=[],
                                                       root=".", inputs={}, outputs={}, job_id="70",
                                                       error="train failed (exit 1): out of memory"))
    assert unfinished([step]) == "train failed (exit 1): out of memory"

