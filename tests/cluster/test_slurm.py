"""The recipes on a real SLURM cluster: a one-node cluster on this machine, started by
scripts/local-slurm.sh (as root, installing SLURM and munge with apt-get when missing).
Where it cannot be started (not root, no apt), these tests skip with the reason.

One SMOKE table 3 runs with --launcher slurm --wait: every step is a SLURM job (the manifests
hold the job ids), one training job is requeued half-way and resumes from its checkpoint, a
re-run submits nothing, table 5 then runs locally on two of its models, and a system whose training
fails stays on the report with its error while the others go on.  (Where a cluster runs,
this replaces tests/recipes/test_pipelines.py's local SMOKE table 3.)  Then train.sh under srun
with two tasks trains one model (gloo, CPU) with the batch of one task."""
import json
import os
import re
import subprocess
import time

import pytest

from conftest import REPO_ROOT, cluster_report, run_command as run, shared_path

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("slurm")]

REPO = REPO_ROOT
SCRIPTS = REPO / "scripts"
SMOKE_MODEL = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "32",
               "--decoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64",
               "--encoder-attention-heads", "2", "--decoder-attention-heads", "2", "--batch-tokens", "1200"]


def slurm_run(*args, env, check=True):
    return run(["bash", SCRIPTS / "reproduce" / "table3.sh", *args, "--launcher", "slurm",
                "--slurm-gpus-per-job", "0"], env, check=check)


@pytest.fixture(scope="module")
def table3(slurm, tmp_path_factory, request):
    """SMOKE table 3 submitted to SLURM, with one training requeued half-way through."""
    data = shared_path("data", "wmt-newstest")
    root = tmp_path_factory.mktemp("slurm")
    roots = ["--work-root", root / "work", "--runs-root", root / "runs"]
    # long enough trainings (checkpoints every 10 updates) to requeue one half-way
    env = {"SLURM_CONF": slurm, "SMOKE": "1", "SMOKE_DATA": str(data),
           "TRAIN_EXTRA_ARGS": "--max-update 40 --save-interval-updates 10"}
    submitted = slurm_run(*roots, env=env)
    runs = root / "runs" / "smoke"
    jobs = json.loads((runs / "slurm" / "jobs.json").read_text())
    # a test stopped half-way leaves no job queued behind it on the cluster
    request.addfinalizer(lambda: subprocess.run(["scancel", *jobs.values()], capture_output=True,
                                                env={**os.environ, "SLURM_CONF": slurm}))
    save = runs / "wmt19-de-en" / "transformer_abs-len100"
    deadline = time.time() + 600
    while not (save / "checkpoint_last.pt").exists():  # its first checkpoint: requeue it now
        assert time.time() < deadline, f"the training job never saved a checkpoint\n{cluster_report(jobs, runs, slurm)}"
        time.sleep(0.5)
    job = jobs["de-en-transformer_abs-len100"]
    # it starts again 11 s later (scripts/local-slurm.sh: cred_expire)
    subprocess.run(["scontrol", "requeue", job], check=True, env={**os.environ, "SLURM_CONF": slurm})
    waited = slurm_run(*roots, "--wait", env=env)
    return {"root": root, "roots": roots, "env": env, "runs": runs, "jobs": jobs, "submitted": submitted,
            "waited": waited, "requeued": save}


def test_a_job_asks_for_no_more_cpus_than_a_node_has(slurm, tmp_path):
    """A job that asks for more CPUs than any node has would wait in the queue for ever: the
    default request is cut to the largest node, an explicit one is refused."""
    node_cpus = max(int(n) for n in subprocess.run(["sinfo", "-h", "-N", "-o", "%c"], capture_output=True, text=True,
                                                     env={**os.environ, "SLURM_CONF": slurm}).stdout.split())
    env = {"SLURM_CONF": slurm, "SMOKE": "1", "SMOKE_DATA": str(shared_path("data", "wmt-newstest"))}
    roots = ["--work-root", tmp_path / "work", "--runs-root", tmp_path / "runs"]
    plan = slurm_run(*roots, "--dry-run", "--threads", node_cpus + 62, env=env).stdout
    prepare = plan.split("# --- job prepare-de-en ---")[1].split("# --- job")[0]
    assert f"#SBATCH --cpus-per-task={node_cpus}\n" in prepare
    refused = slurm_run(*roots, "--dry-run", "--slurm-cpus-per-job", node_cpus + 1, env=env, check=False)
    assert refused.returncode == 1
    assert f"--slurm-cpus-per-job {node_cpus + 1}: the largest node of the default partition has {node_cpus} CPUs" \
        in refused.stderr
    # asked for all the same, through --slurm-args: --wait cancels what SLURM will never start
    stuck = slurm_run(*roots, f"--slurm-args=--cpus-per-task={node_cpus + 1}", "--wait", env=env, check=False)
    assert stuck.returncode == 1
    assert re.search(r"cancelling job \d+: SLURM will never start it \(PartitionConfig", stuck.stderr)
    assert re.search(r"SLURM job\(s\) did not complete: prepare-de-en \(CANCELLED", stuck.stderr)


def test_every_step_ran_as_a_slurm_job(table3):
    runs, jobs = table3["runs"], table3["jobs"]
    assert set(jobs) == {"prepare-de-en", "de-en-transformer_abs-len100", "de-en-transformer_rel-len100",
                         "de-en-transformer_abs-len75", "de-en-transformer_rel-len75", "report-table3"}
    assert "after " in table3["submitted"].stdout  # the systems wait for the data
    manifests = list((table3["root"]).rglob(".steps/*.json"))
    assert len(manifests) > 40
    for manifest in manifests:
        record = json.loads(manifest.read_text())
        assert record["status"] == "done" and record["job_id"] in jobs.values(), manifest
    for system in ("transformer_abs-len100", "transformer_rel-len75"):
        record = json.loads((runs / "wmt19-de-en" / system / ".steps" / "train.json").read_text())
        assert record["job_id"] == jobs[f"de-en-{system}"]
    report = (runs / "reports" / "table3" / "report.md").read_text()
    assert "Absolute@100 (baseline)" in report and "Relative@75" in report
    assert "| Absolute@100 (baseline) |" in table3["waited"].stdout
    assert re.search(r"job \d+ report-table3: COMPLETED", table3["waited"].stderr)


def test_a_requeued_training_resumes_from_its_checkpoint(table3):
    log = (table3["requeued"] / "train.log").read_text()
    assert "No existing checkpoint found" in log  # the first start
    assert re.search(r"Loaded checkpoint .*checkpoint_last\.pt \(epoch \d+ @ [1-9]\d* updates\)", log)
    assert "num_updates 40" in log
    assert re.search(r"job \d+ de-en-transformer_abs-len100: COMPLETED, restarted 1x", table3["waited"].stderr)


def test_a_rerun_submits_nothing(table3):
    again = slurm_run(*table3["roots"], env=table3["env"])
    assert "[submitted" not in again.stdout
    assert again.stdout.count("[done]") == 6


def test_table5_runs_locally_on_the_models_slurm_trained(table3):
    """A local run after a SLURM run: table 5 with one of table 3's schemes reuses its two models
    and table 3's translations, and translates newstest_all, on this machine."""
    five = run(["bash", SCRIPTS / "reproduce" / "table5.sh", "--archs", "transformer_abs", *table3["roots"]],
               table3["env"])
    assert five.stderr.count("skip  train ") == 2 and five.stderr.count("skip  translate ") == 2
    assert five.stderr.count("start translate ") == 2
    for report in ("table5-newstest_all", "table5-concat_seq"):
        md = (table3["runs"] / "reports" / report / "report.md").read_text()
        for name in ("transformer_abs@100 (baseline)", "transformer_abs@75"):
            assert name in md, (report, name)


def test_a_failing_system_stays_on_the_report_and_the_others_go_on(table3):
    broken = table3["runs"] / "wmt19-de-en" / "transformer_rel_k-len75"
    (broken / "train.log").mkdir(parents=True)  # its training cannot write its log: it fails when it runs
    proc = slurm_run(*table3["roots"], "--system", "Broken@75=transformer_rel_k@75", "--wait", env=table3["env"])
    assert "[submitted" in proc.stdout and "[done] de-en-transformer_abs-len100" in proc.stdout
    assert "FAILED de-en-transformer_rel_k-len75" in proc.stderr
    report = (table3["runs"] / "reports" / "table3" / "report.md").read_text()
    assert "Not in this report, because they failed" in report
    assert re.search(r"- Broken@75: .*cannot write .*train\.log", report)
    assert "| Relative@75 |" in report


def test_train_under_srun_with_two_tasks_trains_one_model_with_one_tasks_batch(table3, tmp_path):
    data = table3["root"] / "work" / "smoke" / "wmt19-de-en" / "data-bin" / "len100"
    env = {"SLURM_CONF": table3["env"]["SLURM_CONF"]}
    common = ["--data", data, "--arch", "transformer_abs", "--gpus", "0", *SMOKE_MODEL, "--max-update", "12",
              "--log-interval", "1"]
    run(["srun", "--ntasks", "2", "--kill-on-bad-exit=1", "bash", SCRIPTS / "train.sh", "--save-dir", tmp_path / "two",
         *common], env)
    run(["bash", SCRIPTS / "train.sh", "--save-dir", tmp_path / "one", *common], env)
    two, one = (tmp_path / "two" / "train.log").read_text(), (tmp_path / "one" / "train.log").read_text()
    assert "distributed_world_size': 2" in two and "'max_tokens': 600" in two  # 2 x 600 tokens
    assert "'max_tokens': 1200" in one
    assert two.count("done training") == 1  # rank 0 alone writes the log
    assert (tmp_path / "two" / "checkpoint_best.pt").exists()
    assert json.loads((tmp_path / "two" / ".steps" / "train.json").read_text())["status"] == "done"
    # each update takes the same tokens, whether from one worker or two
    tokens = [[float(w) for w in re.findall(r"wpb=([\d.]+)", log)] for log in (one, two)]
    assert abs(sum(tokens[1]) / len(tokens[1]) / (sum(tokens[0]) / len(tokens[0])) - 1) < 0.35
