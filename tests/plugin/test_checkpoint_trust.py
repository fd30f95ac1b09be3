"""Loading a checkpoint runs no code from it: fairseq's checkpoint loads go through torch's
weights-only unpickler with an allowlist of what fairseq checkpoints hold; a checkpoint
needing anything else is refused in one line unless FAIRSEQ_RELPOS_TRUST_CHECKPOINTS trusts it."""
import argparse
import io
import os

import numpy as np
import pytest
import torch

from fairseq_relpos_compat import TRUST_VARIABLE, UntrustedCheckpointError, load_checkpoint

from conftest import fairseq


class RunsCode:
    """Pickled as a call of os.system: what a malicious checkpoint carries."""

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


def save(state, path, legacy=False):
    """torch.save, or with ``legacy`` the format of torch < 1.6 with numpy 1's module names:
    how the checkpoints of fairseq <= 0.9 and of the released models were written."""
    if not legacy:
        torch.save(state, path)
        return path
    buffer = io.BytesIO()
    torch.save(state, buffer, _use_new_zipfile_serialization=False)
    path.write_bytes(buffer.getvalue().replace(b"numpy._core.multiarray", b"numpy.core.multiarray"))
    return path


def what_fairseq_writes():
    """A checkpoint's objects other than tensors, made by fairseq itself where fairseq makes
    them: the arguments (``args`` up to fairseq 0.10, ``cfg["model"]`` since), and the metrics'
    state with --eval-bleu's counts (numpy arrays) and a numpy scalar as a validation loss."""
    from fairseq.logging import metrics

    with metrics.aggregate(new_root=True):
        with metrics.aggregate("valid"):
            metrics.log_scalar("loss", torch.tensor(2.5), 10)
            metrics.log_scalar("_bleu_counts", np.array([30, 20, 10, 5]))
            metrics.log_scalar("_bleu_sys_len", 42)
        state = metrics.state_dict()
    args = argparse.Namespace(arch="transformer_rel", lr=[0.003], encoder_pos="rel", max_tokens=2000)
    return {"args": args, "cfg": {"model": args}, "model": {"w": torch.ones(2, 3)},
            "extra_state": {"metrics": state, "val_loss": np.float64(2.5), "mask": np.array([True, False])}}


@pytest.fixture
def marker(tmp_path, monkeypatch):
    monkeypatch.delenv(TRUST_VARIABLE, raising=False)
    return tmp_path / "MARKER"


def state_carrying_code(marker):
    return {"model": {"w": torch.ones(2)}, "extra_state": {"x": RunsCode(f"touch {marker}")}}


@pytest.fixture
def carrying_code(tmp_path, marker):
    return save(state_carrying_code(marker), tmp_path / "evil.pt")


def refusal(path):
    return (f"refused to load {path}: it needs posix.system, which a fairseq checkpoint does not hold and which could "
            f"run code as it loads; to load a file you trust, set {TRUST_VARIABLE}={path} (or =1 for every "
            "checkpoint)")


def test_fairseqs_checkpoint_loads_go_through_the_allowlist():
    from fairseq import checkpoint_utils
    from fairseq.distributed import utils as distributed_utils

    assert checkpoint_utils.torch.load is load_checkpoint
    # the objects a job's workers broadcast keep a full load (docs/plugin.md says why)
    assert distributed_utils.torch.load.keywords == {"weights_only": False}


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy-numpy1"])
def test_what_fairseq_checkpoints_hold_loads_weights_only(legacy, tmp_path, marker):
    state = what_fairseq_writes()
    path = save(state, tmp_path / "checkpoint.pt", legacy)
    loaded = load_checkpoint(path, map_location="cpu")
    assert loaded["args"] == state["args"] and loaded["cfg"]["model"] == state["args"]
    valid = dict((name, meter) for _, name, _, meter in loaded["extra_state"]["metrics"]["valid"])
    assert valid["_bleu_counts"]["val"].tolist() == [30, 20, 10, 5]
    assert loaded["extra_state"]["val_loss"] == np.float64(2.5)
    assert loaded["extra_state"]["mask"].tolist() == [True, False]


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_a_checkpoint_carrying_code_is_refused_in_one_line(legacy, tmp_path, marker):
    from fairseq import checkpoint_utils

    path = save(state_carrying_code(marker), tmp_path / "evil.pt", legacy)
    for load in (checkpoint_utils.load_checkpoint_to_cpu, checkpoint_utils.load_ema_from_checkpoint):
        with pytest.raises(UntrustedCheckpointError) as refused:
            load(str(path))
        assert str(refused.value) == refusal(path)
    assert not marker.exists()


def test_arrays_of_text_or_objects_are_refused(tmp_path, marker):
    """numpy's object arrays and strings are not what fairseq writes: out of the allowlist."""
    for name, array in (("objects", np.array([{"a": 1}], dtype=object)), ("text", np.array(["a"]))):
        path = save({"extra_state": {"x": array}}, tmp_path / f"{name}.pt")
        with pytest.raises(UntrustedCheckpointError, match=f"refused to load {path}: torch's weights-only"):
            load_checkpoint(path)


def test_the_hub_refuses_a_checkpoint_carrying_code(carrying_code, marker):
    from fairseq_relpos import RelPosTransformerModel

    with pytest.raises(UntrustedCheckpointError) as refused:
        RelPosTransformerModel.from_pretrained(str(carrying_code.parent), checkpoint_file=carrying_code.name,
                                               data_name_or_path=str(carrying_code.parent))
    assert str(refused.value) == refusal(carrying_code)
    assert not marker.exists()


@pytest.mark.parametrize("trust", ["file", "folder", "every"])
def test_a_trusted_checkpoint_loads(trust, carrying_code, marker, monkeypatch):
    folder = carrying_code.parent
    monkeypatch.setenv(TRUST_VARIABLE, {"file": os.pathsep.join([str(folder / "other.pt"), str(carrying_code)]),
                                        "folder": str(folder), "every": "1"}[trust])
    assert load_checkpoint(carrying_code)["model"]["w"].tolist() == [1.0, 1.0]
    assert marker.exists()  # a trusted file is unpickled in full: its code ran


def test_trusting_another_file_trusts_not_this_one(carrying_code, marker, monkeypatch, tmp_path):
    monkeypatch.setenv(TRUST_VARIABLE, str(tmp_path / "other.pt"))
    with pytest.raises(UntrustedCheckpointError):
        load_checkpoint(carrying_code)
    assert not marker.exists()


def test_the_recipes_refuse_to_resume_from_a_checkpoint_carrying_code(carrying_code, marker):
    from relpos_recipes.tools.fairseq_train import checkpoint_facts

    with pytest.raises(SystemExit, match="^error: refused to load .*evil.pt: it needs posix.system"):
        checkpoint_facts(carrying_code)
    assert not marker.exists()


@pytest.mark.slow
def test_fairseq_generate_refuses_a_checkpoint_carrying_code_in_one_line(reversal_data_bin, carrying_code, marker):
    refused = fairseq("fairseq-generate", reversal_data_bin, "--user-dir", "fairseq_relpos", "--path", carrying_code,
                      "--gen-subset", "test", "--cpu", check=False)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.splitlines()[-1] == f"error: {refusal(carrying_code)}"
    assert not marker.exists()
