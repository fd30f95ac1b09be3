"""The start-up fixes: active in a fresh interpreter (or in this one, where that shows the
same), each one switchable off by its variable (in a fresh interpreter)."""
import importlib.util
import os
import subprocess
from pathlib import Path

import pytest
import torch

from conftest import BIN_DIR, SHARED


def python(code, *args, flags=(), **env):
    """Runs ``code`` in a fresh interpreter of this environment (``args`` are its sys.argv[1:],
    ``flags`` the interpreter's), every fix on unless ``env`` switches it off."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("FAIRSEQ_RELPOS_COMPAT")}
    return subprocess.run([str(BIN_DIR / "python"), *flags, "-c", code, *map(str, args)],
                          capture_output=True, text=True, env={**base, **env})


def test_fairseq_imports_on_this_stack():
    result = python("import fairseq, fairseq.models.transformer, hydra.core.config_store; print('ok')")
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.parametrize("switch", ["FAIRSEQ_RELPOS_COMPAT", "FAIRSEQ_RELPOS_COMPAT_DATACLASS_HASH"])
def test_dataclass_fix_switches_off(switch):
    result = python("import fairseq", **{switch: "0"})
    assert result.returncode != 0 and "mutable default" in result.stderr


PLUGIN_CONFIGS = """
from dataclasses import dataclass
from fairseq.dataclass import FairseqDataclass


@dataclass
class ScheduleConfig(FairseqDataclass):
    warmup_updates: int = 7


@dataclass
class PluginConfig(FairseqDataclass):
    schedule: ScheduleConfig = ScheduleConfig()
"""


def test_plugin_configs_may_nest_config_instances(tmp_path):
    """Python 3.11 refuses a dataclass default whose class is unhashable: a user-dir plugin's
    FairseqDataclass nesting another as its default imports (as fairseq's own configs do),
    while a plain dataclass of the same plugin keeps Python's rule."""
    plugin = tmp_path / "my_plugin"
    plugin.mkdir()
    (plugin / "__init__.py").write_text(PLUGIN_CONFIGS)
    code = (
        "import argparse, dataclasses, sys\n"
        "from fairseq.utils import import_user_module\n"
        "import_user_module(argparse.Namespace(user_dir=sys.argv[1]))\n"
        "print(sys.modules['my_plugin'].PluginConfig().schedule.warmup_updates)\n"
        "@dataclasses.dataclass\n"
        "class Plain:\n"
        "    x: int = 0\n"
        "try:\n"
        "    @dataclasses.dataclass\n"
        "    class Holder:\n"
        "        plain: Plain = Plain()\n"
        "except ValueError as error:\n"
        "    print(error)\n"
    )
    result = python(code, plugin)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines()[0] == "7"
    assert "mutable default" in result.stdout.splitlines()[1]


def test_checkpoint_load_fix_and_its_switch():
    import fairseq.checkpoint_utils

    assert fairseq.checkpoint_utils.torch.load is not torch.load
    code = "import fairseq.checkpoint_utils as c, torch; print(c.torch.load is torch.load)"
    assert python(code, FAIRSEQ_RELPOS_COMPAT_CHECKPOINT_LOAD="0").stdout.strip() == "True"


def test_numpy_aliases_only_inside_fairseq():
    import fairseq.data.data_utils
    import numpy

    assert fairseq.data.data_utils.np.int is int and fairseq.data.data_utils.np.float is float
    assert not hasattr(numpy, "float")


def test_stock_encoder_layer_stays_off_the_fused_path_after_loading():
    code = (
        "from fairseq.models.transformer import TransformerConfig\n"
        "from fairseq.modules.transformer_layer import TransformerEncoderLayerBase\n"
        "layer = TransformerEncoderLayerBase(TransformerConfig())\n"
        "layer.load_state_dict(layer.state_dict())\n"
        "print(layer.load_to_BT)\n"
    )
    namespace = {}
    exec(code.replace("print(layer.load_to_BT)", ""), namespace)
    assert namespace["layer"].load_to_BT is False
    assert python(code, FAIRSEQ_RELPOS_COMPAT_BETTER_TRANSFORMER="0").stdout.strip().endswith("True")


def test_hydra_finds_its_plugins_without_find_module():
    """Python 3.12 removed the finders' find_module, which hydra 1.0.7's plugin scan calls:
    removed here too, the scan still works, and fails as on 3.12 with the fix off."""
    code = (
        "import importlib.machinery\n"
        "if hasattr(importlib.machinery.FileFinder, 'find_module'):\n"
        "    del importlib.machinery.FileFinder.find_module\n"
        "from hydra.core.plugins import Plugins\n"
        "from hydra.plugins.launcher import Launcher\n"
        "print(len(Plugins.instance().discover(Launcher)))\n"
    )
    result = python(code)
    assert result.returncode == 0 and int(result.stdout.split()[-1]) >= 1, result.stderr[-2000:]
    result = python(code, FAIRSEQ_RELPOS_COMPAT_HYDRA_PLUGIN_SCAN="0")
    assert result.returncode != 0 and "find_module" in result.stderr


def test_fairseq_imports_without_typing_io():
    """Python 3.13 removed typing.io, which antlr4 4.8 and hydra 1.0.7's grammar import on
    every fairseq command: removed here too (where it exists) before start-up (python -S,
    then the start-up's site.main(), .pth files included), fairseq still imports, and fails
    as on 3.13 with the fix off."""
    code = (
        "import sys, typing\n"
        "sys.modules.pop('typing.io', None), vars(typing).pop('io', None)\n"
        "import site\n"
        "site.main()\n"
        "import fairseq, antlr4, hydra.core.override_parser.overrides_parser\n"
        "from typing.io import TextIO\n"
        "print(TextIO is typing.TextIO)\n"
    )
    result = python(code, flags=["-S"])
    assert result.returncode == 0 and result.stdout.split() == ["True"], result.stderr[-2000:]
    result = python(code, flags=["-S"], FAIRSEQ_RELPOS_COMPAT_TYPING_IO="0")
    assert result.returncode != 0 and "No module named 'typing.io'" in result.stderr


def test_a_model_no_plugin_registers_is_named():
    """A checkpoint of a plugin's model loaded without the plugin's --user-dir: fairseq's own
    message passes the model's config, braces and all, through str.format and fails with
    KeyError or IndexError instead; the fix names the model and the option."""
    code = (
        "from omegaconf import OmegaConf\n"
        "from fairseq import models\n"
        "cfg = OmegaConf.create({'_name': 'transformer_rel', 'arch': 'transformer_rel', 'encoder_pos': 'shaw'})\n"
        "models.build_model(cfg, None)\n"
    )
    result = python(code)
    assert result.returncode != 0
    assert ("ValueError: unknown model (architecture) 'transformer_rel': no loaded model registers it. A plugin's "
            "model needs the plugin loaded: --user-dir (fairseq-relpos's architectures: --user-dir fairseq_relpos"
            in result.stderr), result.stderr[-2000:]
    result = python(code, FAIRSEQ_RELPOS_COMPAT_UNKNOWN_MODEL_MESSAGE="0")
    assert result.returncode != 0 and result.stderr.splitlines()[-1].startswith(("KeyError", "IndexError"))


FP16_TRAINING = """
import sys
from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq_cli import train

args = options.parse_args_and_arch(options.get_training_parser(), [sys.argv[1], "--arch", "transformer", "--cpu",
                                                                  "--max-tokens", "100", *sys.argv[2:]])
train.main(convert_namespace_to_omegaconf(args))
"""


def test_fp16_on_the_cpu_is_refused_by_name_before_any_work(tmp_path):
    """fairseq-train --fp16 --cpu read the data, built the model, then failed with a bare
    "AssertionError: Torch not compiled with CUDA enabled" (or on another device's line);
    now refused before it reads anything (the data folder here does not even exist)."""
    result = python(FP16_TRAINING, tmp_path / "no data", "--fp16")
    assert result.returncode != 0
    assert ("ValueError: --fp16 trains on CUDA devices only (fairseq's FP16 optimizer keeps its float32 copy of the "
            "parameters there), and this training runs on the CPU (--cpu): train without it (float32)"
            in result.stderr.splitlines()[-1]), result.stderr[-2000:]
    result = python(FP16_TRAINING, tmp_path / "no data", "--fp16", FAIRSEQ_RELPOS_COMPAT_FP16_ON_CPU="0")
    assert result.returncode != 0 and "trains on CUDA devices only" not in result.stderr


# Command lines whose configuration the one-pass composition (CONFIG_COMPOSE) must give
# exactly as Hydra does: this plugin's task and architectures with every option group our
# recipes set, a fairseq model with a dataclass of its own, generation with a BPE, a tokenizer
# and a scorer, a path holding a quote, a comma and "=", and one Hydra refuses (the Moses
# tokenizer without languages: a fairseq bug, which must stay the same refusal).
COMPOSED_COMMANDS = [
    ("training", ["DATA", "--user-dir", "fairseq_relpos", "--task", "relpos_translation", "--arch", "transformer_xl",
                  "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "5e-4", "--lr-scheduler", "inverse_sqrt",
                  "--warmup-updates", "400", "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
                  "--max-tokens", "4096", "--update-freq", "2", "--eval-bleu", "--eval-bleu-args", '{"beam": 4}',
                  "--save-dir", "runs/it's a,b=c", "--seed", "3", "--max-update", "100"]),
    ("training", ["DATA", "--task", "language_modeling", "--arch", "transformer_lm_gpt", "--optimizer", "sgd",
                  "--lr", "0.25,0.1", "--lr-scheduler", "cosine", "--max-tokens", "512"]),
    ("generation", ["DATA", "--path", "model.pt", "--beam", "4", "--bpe", "sentencepiece", "--sentencepiece-model",
                    "spm.model", "--tokenizer", "moses", "-s", "de", "-t", "en", "--scoring", "sacrebleu"]),
    ("generation", ["DATA", "--path", "model.pt", "--tokenizer", "moses"]),
]


def _compose_check():
    """scripts/compose-check.py as a module: its comparison of two compositions."""
    path = Path(__file__).resolve().parents[2] / "scripts" / "compose-check.py"
    spec = importlib.util.spec_from_file_location("compose_check", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("parser_name, argv", COMPOSED_COMMANDS)
def test_configuration_composed_in_one_pass_is_hydras(parser_name, argv, tmp_path, monkeypatch):
    """CONFIG_COMPOSE makes each command's configuration without Hydra's deep copies: the
    same keys in the same order, the same values and types, the same refusal."""
    import hydra.experimental
    from fairseq import options
    from fairseq.dataclass import utils

    check = _compose_check()
    args = options.parse_args_and_arch(getattr(options, f"get_{parser_name}_parser")(),
                                       [str(tmp_path) if arg == "DATA" else arg for arg in argv])
    assert utils.compose is not hydra.experimental.compose  # the fix is on in this process
    ours = check.composed(args)
    monkeypatch.setattr(utils, "compose", hydra.experimental.compose)
    assert ours == check.composed(args)


def test_the_speed_fixes_switch_off():
    """CONFIG_COMPOSE and FAST_ENCODE_LINE, each off by its variable (one interpreter for both)."""
    code = ("import fairseq.dataclass.utils as u, hydra.experimental as h\n"
            "from fairseq.data import Dictionary\n"
            "print(u.compose is h.compose, hasattr(Dictionary.encode_line, '__wrapped__'))")
    off = python(code, FAIRSEQ_RELPOS_COMPAT_CONFIG_COMPOSE="0", FAIRSEQ_RELPOS_COMPAT_FAST_ENCODE_LINE="0")
    assert off.stdout.strip() == "True False", off.stderr[-2000:]


def test_a_line_is_encoded_as_fairseqs_encode_line_encodes_it():
    """FAST_ENCODE_LINE: the same int32 tensor, the same consumer calls in the same order and the
    same symbols added, for every option of encode_line; lines of real text where ../shared is."""
    from fairseq.data import Dictionary

    stock = Dictionary.encode_line.__wrapped__  # the fix is on in this process
    text = ["ein Haus am See .", "", "  zwei   Leer zeichen ", "unbekannt@@ es Wort", "a"]
    newstest = SHARED / "data" / "wmt-newstest" / "de-en" / "newstest2014.de"
    if newstest.is_file():  # without ../shared (a user's clone), the lines above alone
        text += newstest.read_text(encoding="utf-8").split("\n")[:300]

    def dictionary():
        d = Dictionary()
        for word in "ein Haus am See . Wort a".split():
            d.add_symbol(word)
        return d

    for options in ({}, {"add_if_not_exist": False}, {"append_eos": False}, {"reverse_order": True},
                    {"line_tokenizer": lambda line: line.split(" ")}):
        ours, theirs = dictionary(), dictionary()
        calls, stock_calls = [], []
        for line in text:
            expected = stock(theirs, line, consumer=lambda *c: stock_calls.append(c), **options)
            got = ours.encode_line(line, consumer=lambda *c: calls.append(c), **options)
            assert got.dtype == expected.dtype == torch.int32 and got.device.type == "cpu"
            assert got.tolist() == expected.tolist(), (options, line)
        assert calls == stock_calls and ours.symbols == theirs.symbols and ours.count == theirs.count


def test_fairseqs_optimizer_runs_without_importing_the_tracer_until_it_is_imported():
    """torch.optim.Optimizer's methods import torch._dynamo (2 s) to run outside a trace; none
    can exist before it is imported, and once it is, they run through torch._dynamo.disable."""
    code = (
        "import sys, torch\n"
        "from fairseq.optim.adam import Adam\n"
        "weight = torch.nn.Parameter(torch.ones(2))\n"
        "optimizer = Adam([weight], lr=0.1)\n"
        "weight.sum().backward(); optimizer.step(); optimizer.zero_grad()\n"
        "optimizer.load_state_dict(optimizer.state_dict())\n"
        "print('torch._dynamo' in sys.modules, weight.tolist())\n"
        "import torch._dynamo\n"
        "optimizer.zero_grad()\n"
        "fn = type(optimizer).zero_grad.__wrapped__\n"
        "print(fn.__dynamo_disable.__module__)\n"
    )
    lazy = python(code).stdout.split("\n")
    stock = python(code, FAIRSEQ_RELPOS_COMPAT_LAZY_DYNAMO="0").stdout.split("\n")
    assert lazy[0].startswith("False [0.9") and stock[0].startswith("True ")
    assert lazy[0].split(" ", 1)[1] == stock[0].split(" ", 1)[1]  # the same step
    assert lazy[1].startswith("torch._dynamo")  # torch's own wrapper from then on
