"""scripts/gpu-check.sh and scripts/wheelhouse.sh where there is no GPU: refused at once, naming
what is missing, before any folder is made.  (What they do on a GPU, and the wheelhouse's
offline install, are in docs/testing.md, "The GPU check".)"""
import os
import shutil
import subprocess
import sys

import pytest
import torch

from conftest import REPO_ROOT

SCRIPTS = REPO_ROOT / "scripts"


def tools(tmp_path, nvidia_smi=None):
    """A PATH with the few tools the scripts need before they refuse, and an nvidia-smi that
    prints ``nvidia_smi`` (none where it is None): whatever this machine has."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("dirname", "grep", "ls", "tail"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    if nvidia_smi is not None:
        (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\nprintf '{nvidia_smi}'\n")
        (bin_dir / "nvidia-smi").chmod(0o755)
    return str(bin_dir)


def gpu_check(tmp_path, *args, nvidia_smi=None, env=None):
    env = {"PATH": tools(tmp_path, nvidia_smi), "HOME": os.environ.get("HOME", "/"), **(env or {})}
    return subprocess.run([shutil.which("bash"), SCRIPTS / "gpu-check.sh", "--out", tmp_path / "out", *args],
                          capture_output=True, text=True, env=env, timeout=120)


ONE_GPU = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)\\n"


@pytest.mark.parametrize("nvidia_smi, args, message", [
    (None, [], "no CUDA GPU here: nvidia-smi is not on PATH (no NVIDIA driver)"),
    ("No devices were found\\n", [], "no CUDA GPU here: nvidia-smi lists no GPU"),
    (ONE_GPU, ["--parts", "board", "--board-data", "/nonexistent"],
     "--board-data /nonexistent: not a prepared Tatoeba folder (no data-bin/lenN or testsets/"),
    (ONE_GPU, ["--wheelhouse", "/nonexistent"], "--wheelhouse /nonexistent: no fairseq 0.12.2 wheel in it"),
    (ONE_GPU, ["--parts", "tests,oops"], "--parts: expected some of tests,bench,board, got 'oops'"),
    (ONE_GPU, ["--tests-time", "0"], "--tests-time: expected a positive integer, got '0'"),
])
def test_the_gpu_check_refuses_at_once_naming_what_is_missing(tmp_path, nvidia_smi, args, message):
    proc = gpu_check(tmp_path, *args, nvidia_smi=nvidia_smi)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="torch sees a GPU here")
def test_a_driver_without_a_cuda_torch_is_refused_naming_the_torch(tmp_path):
    wheelhouse = tmp_path / "wheels"
    wheelhouse.mkdir()
    (wheelhouse / "fairseq-0.12.2-cp312-cp312-linux_x86_64.whl").touch()
    proc = gpu_check(tmp_path, "--wheelhouse", wheelhouse, "--parts", "tests", nvidia_smi=ONE_GPU,
                     env={"PYTHON": sys.executable})
    assert proc.returncode == 2, proc.stderr
    assert f"no CUDA GPU for {sys.executable}'s torch: torch {torch.__version__} built for CUDA" in proc.stderr
    assert not (tmp_path / "out").exists() and not (REPO_ROOT / ".venv-gpu").exists()


@pytest.mark.parametrize("args, message", [
    ([], "--python is required"),
    (["--python", "3.12"], "--out is required"),
    (["--python", "three", "--out", "x"], "--python: expected a version such as 3.12 or an interpreter's path"),
    (["--python", "/nonexistent/python", "--out", "x"], "--python: /nonexistent/python is not an executable"),
])
def test_the_wheelhouse_refuses_bad_options(tmp_path, args, message):
    proc = subprocess.run(["bash", SCRIPTS / "wheelhouse.sh", *args], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "x").exists()
