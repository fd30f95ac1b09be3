"""Start-up fixes that let fairseq 0.12.2 run on Python 3.11 to 3.13, torch >= 2.6, numpy 2
and bitarray 3.

Installed with a ``fairseq_relpos_compat.pth`` file, so this module is imported when the
interpreter starts; that is what makes the stock ``fairseq-*`` console scripts work.  It
must stay cheap: it imports nothing heavy and patches each fairseq module only when that
module is first imported (a post-import hook), never fairseq eagerly.

Two more give fairseq's own failures their right message, where fairseq's is broken or
bare: a model no loaded plugin registers, and --fp16 on the CPU.  One more takes the seconds Hydra
spends composing each command's configuration off every fairseq command (config_compose), one
the import of torch's tracer off every training (lazy_dynamo), and one the tensor writes token by
token off every binarized line (fast_encode_line).

Every fix touches only fairseq's and hydra's config classes or names inside fairseq and
hydra modules, except ``typing_io``, which puts back the ``typing.io`` module that Python 3.13
dropped (for antlr4 and hydra), ``checkpoint_load``, which also tells torch's weights-only
unpickler what fairseq checkpoints hold, and ``lazy_dynamo``, which gives four methods of
torch's Optimizer, in a process that imports fairseq's optimizers, what torch caches for them;
each is a no-op on a stack that does not need it (or a command that does not fail), and can be
switched off:

    FAIRSEQ_RELPOS_COMPAT=0              switch every fix off
    FAIRSEQ_RELPOS_COMPAT_<NAME>=0       switch one fix off (NAME as in FIXES, upper case)
"""
import argparse
import dataclasses
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import os
import pickle
import pkgutil
import re
import sys
import types

_SWITCH = "FAIRSEQ_RELPOS_COMPAT"


def enabled(name):
    """Whether fix ``name`` is switched on (it is unless its variable says 0/false/no/off)."""
    off = {"0", "false", "no", "off"}
    return (
        os.environ.get(_SWITCH, "1").lower() not in off
        and os.environ.get(f"{_SWITCH}_{name.upper()}", "1").lower() not in off
    )


def _version_tuple(version):
    return tuple(int(part) for part in version.split("+")[0].split(".")[:2])


def _module_with(module, **overrides):
    """A copy of ``module`` with some names replaced, to hand to one fairseq module as its
    import, so the real module stays untouched for everyone else."""
    copy = types.ModuleType(module.__name__)
    copy.__dict__.update(module.__dict__)
    copy.__dict__.update(overrides)
    return copy


# --- 1. dataclass_hash ------------------------------------------------------------------
# Python 3.11 rejects a dataclass field whose default is an instance of an unhashable
# class; fairseq's configs (and a plugin's, wherever it lives) nest FairseqDataclass
# instances as defaults, and hydra 1.0.7's own configs nest its dataclasses.  Giving those
# classes identity hashing is what Python < 3.11 accepted implicitly.
_FAIRSEQ_CONFIG_BASE = ("fairseq.dataclass.configs", "FairseqDataclass")


def _is_config_class(cls):
    """A FairseqDataclass subclass (found by name: fairseq need not be imported yet) or a
    hydra dataclass (they share no base class)."""
    return cls.__module__.split(".")[0] == "hydra" or any(
        (base.__module__, base.__qualname__) == _FAIRSEQ_CONFIG_BASE for base in cls.__mro__
    )


def _fix_dataclass_hash():
    if sys.version_info < (3, 11) or getattr(dataclasses, "_relpos_patched", False):
        return
    process_class = dataclasses._process_class

    @functools.wraps(process_class)
    def process_class_with_identity_hash(cls, *args, **kwargs):
        cls = process_class(cls, *args, **kwargs)
        if cls.__hash__ is None and _is_config_class(cls):
            cls.__hash__ = object.__hash__
        return cls

    dataclasses._process_class = process_class_with_identity_hash
    dataclasses._relpos_patched = True


# --- 2. checkpoint_load -----------------------------------------------------------------
# A pickled checkpoint can run any code as it loads, and users load other people's (a
# colleague's run, a paper's release).  fairseq's checkpoint loads (checkpoint_utils:
# load_checkpoint_to_cpu, behind --path, --restore-file, --finetune-from-model and the hub,
# and load_ema_from_checkpoint) go through torch's weights-only unpickler, which builds only
# torch's own types and the globals of checkpoint_globals(), registered with torch when
# fairseq is imported (so fairseq's scripts/average_checkpoints.py, which calls torch.load
# itself, reads checkpoints too).  A file that needs another global is refused in one line
# that says how to load it anyway, if the user trusts it (TRUST_VARIABLE).
TRUST_VARIABLE = "FAIRSEQ_RELPOS_TRUST_CHECKPOINTS"
# the fairseq commands that load checkpoints: a refusal ends them with its line, no traceback
_CHECKPOINT_COMMANDS = ("train", "generate", "interactive", "validate", "eval_lm")


class UntrustedCheckpointError(pickle.UnpicklingError):
    """A checkpoint needs a global outside checkpoint_globals(); the message is one line."""


def checkpoint_globals():
    """What fairseq checkpoints hold besides torch's types and plain containers: the
    arguments (argparse.Namespace: the ``args`` of fairseq <= 0.10, ``cfg["model"]`` of a
    model registered with arguments, as relpos_transformer is) and numpy arrays and scalars
    of numbers (--eval-bleu's n-gram counts in the metrics' state), under numpy 2's module
    names and numpy 1's.  All are data: a Namespace only gets its attributes set, numpy
    rebuilds an array or scalar of a numeric or boolean dtype from its bytes, and the
    dtypes of text and of Python objects stay out."""
    import numpy

    multiarray = numpy._core.multiarray if hasattr(numpy, "_core") else numpy.core.multiarray
    numeric = numpy.typecodes["AllInteger"] + numpy.typecodes["AllFloat"] + "?"
    return [
        argparse.Namespace,
        numpy.ndarray,
        numpy.dtype,
        *{type(numpy.dtype(code)) for code in numeric},
        *[(getattr(multiarray, name), f"{module}.{name}")
          for module in ("numpy._core.multiarray", "numpy.core.multiarray") for name in ("_reconstruct", "scalar")],
    ]


def _trusted(path):
    """Whether TRUST_VARIABLE is 1, or names ``path`` or a folder above it."""
    value = os.environ.get(TRUST_VARIABLE, "")
    if value == "1":
        return True
    if path is None:
        return False
    path = os.path.realpath(path)
    for entry in filter(None, value.split(os.pathsep)):
        entry = os.path.realpath(entry)
        if path == entry or path.startswith(entry.rstrip(os.sep) + os.sep):
            return True
    return False


def _refusal(f, path, error):
    """The line refusing checkpoint ``f``: every global torch finds in it outside the
    allowlist (a static scan of the archive), else what torch's unpickler refused."""
    import torch

    if hasattr(f, "seek"):
        f.seek(0)
    try:
        found = torch.serialization.get_unsafe_globals_in_checkpoint(f)
    except ValueError:  # torch < 1.6's format, not a zip archive: torch's error names the first
        found = []
    found = sorted(set(found or re.findall(r"GLOBAL ([\w.]+)", str(error))))
    if found:
        why = (f"it needs {', '.join(found)}, which a fairseq checkpoint does not hold and which could run code "
               "as it loads")
    else:
        reason = re.search(r"WeightsUnpickler error: (.+?)(?:\n\n|$)", str(error), re.S)
        why = "torch's weights-only unpickler refused it ({})".format(
            " ".join((reason.group(1) if reason else str(error)).split()))
    name = os.path.abspath(path) if path is not None else "a checkpoint"
    return (f"refused to load {name}: {why}; to load a file you trust, set {TRUST_VARIABLE}={name} "
            "(or =1 for every checkpoint)")


def load_checkpoint(f, *args, **kwargs):
    """torch.load for fairseq's checkpoints: weights-only with checkpoint_globals(), unless
    TRUST_VARIABLE trusts the file; refuses with UntrustedCheckpointError (nothing of the
    file is used)."""
    import torch

    path = os.fspath(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", None)
    path = path if isinstance(path, str) else None
    if _trusted(path):
        return torch.load(f, *args, **{**kwargs, "weights_only": False})
    torch.serialization.add_safe_globals(checkpoint_globals())  # a set: adding again changes nothing
    try:
        return torch.load(f, *args, **{**kwargs, "weights_only": True})
    except pickle.UnpicklingError as error:
        raise UntrustedCheckpointError(_refusal(f, path, error)) from None


def _fix_checkpoint_load(module):
    import torch

    torch.serialization.add_safe_globals(checkpoint_globals())
    module.torch = _module_with(torch, load=load_checkpoint)


def _refusal_as_one_line(module):
    main = module.cli_main

    @functools.wraps(main)
    def main_refusing_in_one_line(*args, **kwargs):
        try:
            return main(*args, **kwargs)
        except UntrustedCheckpointError as refusal:
            raise SystemExit(f"error: {refusal}") from None

    module.cli_main = main_refusing_in_one_line


# The objects fairseq broadcasts between a job's workers (distributed.utils: on resuming,
# the checkpoint rank 0 loaded, its config made OmegaConf objects) keep a full load: see
# docs/plugin.md for why.
def _torch_with_full_load(torch):
    if _version_tuple(torch.__version__) < (2, 6):
        return torch
    return _module_with(torch, load=functools.partial(torch.load, weights_only=False))


def _fix_broadcast_load(module):
    import torch

    module.torch = _torch_with_full_load(torch)


# --- 3. better_transformer --------------------------------------------------------------
# After a checkpoint load the stock encoder layer switches to torch's fused
# "BetterTransformer" kernel, which rejects fairseq's padded batches on torch >= 2
# ("Mask Type should be defined").  Keep the layer on its ordinary path.
def _fix_better_transformer(module):
    import torch

    if _version_tuple(torch.__version__) < (2, 0):
        return
    layer_cls = module.TransformerEncoderLayerBase
    load_from_state_dict = layer_cls._load_from_state_dict

    @functools.wraps(load_from_state_dict)
    def load_without_fast_path(self, *args, **kwargs):
        load_from_state_dict(self, *args, **kwargs)
        self.load_to_BT = False

    layer_cls._load_from_state_dict = load_without_fast_path


# --- 4. numpy_aliases -------------------------------------------------------------------
# numpy >= 1.24 removed np.int / np.float, which a few fairseq modules still name.
def _fix_numpy_aliases(module):
    if not (hasattr(module.np, "float") and hasattr(module.np, "int")):
        module.np = _module_with(module.np, int=int, float=float)


# --- 5. sacrebleu_score -----------------------------------------------------------------
# fairseq-score --sacrebleu passes open files (lines keep their newline) and a list of one
# file to sacrebleu; sacrebleu 2.x wants lists of strings.
def _fix_sacrebleu_score(module):
    import sacrebleu

    if _version_tuple(sacrebleu.__version__) < (2, 0):
        return

    def corpus_bleu(hypotheses, references, **kwargs):
        hypotheses = [line.rstrip("\n") for line in hypotheses]
        references = [[line.rstrip("\n") for line in ref] for ref in references]
        return sacrebleu.corpus_bleu(hypotheses, references, **kwargs)

    shim = _module_with(sacrebleu, corpus_bleu=corpus_bleu)
    # score.py imports sacrebleu inside cli_main(): lend it the shim for that call only.
    main = module.cli_main

    @functools.wraps(main)
    def main_with_shim(*args, **kwargs):
        sys.modules["sacrebleu"] = shim
        try:
            return main(*args, **kwargs)
        finally:
            sys.modules["sacrebleu"] = sacrebleu

    module.cli_main = main_with_shim


# --- 6. cpu_ddp -------------------------------------------------------------------------
# fairseq always passes device_ids=[device_id] to DistributedDataParallel; for a CPU model
# (torchrun + gloo) torch requires device_ids=None.
def _fix_cpu_ddp(module):
    make_ddp = module.DistributedDataParallel

    def ddp_for_device(*args, **kwargs):
        model = kwargs.get("module", args[0] if args else None)
        if next(model.parameters()).device.type == "cpu":
            kwargs["device_ids"] = None
            kwargs["output_device"] = None
        return make_ddp(*args, **kwargs)

    module.DistributedDataParallel = ddp_for_device


# --- 7. user_dir_by_name ----------------------------------------------------------------
# --user-dir takes a path; with an installed plugin, also accept the package's name so that
# `--user-dir fairseq_relpos` works from any directory.
def _fix_user_dir_by_name(module):
    import_user_module = module.import_user_module

    @functools.wraps(import_user_module)
    def import_user_module_or_package(args):
        user_dir = getattr(args, "user_dir", None)
        if user_dir and not os.path.exists(user_dir) and os.sep not in user_dir.strip(os.sep):
            spec = importlib.util.find_spec(user_dir)
            if spec is not None and spec.submodule_search_locations:
                package_dir = list(spec.submodule_search_locations)[0]
                args = argparse.Namespace(user_dir=package_dir)
        return import_user_module(args)

    module.import_user_module = import_user_module_or_package


# --- 8. hydra_plugin_scan ---------------------------------------------------------------
# Python 3.12 removed the import finders' find_module(); hydra 1.0.7 scans its plugins with
# importer.find_module(name).load_module(name), so every fairseq command failed at start-up
# ("'FileFinder' object has no attribute 'find_module'").  Its scan gets finders that
# answer find_module again, with a loader that imports the module the modern way.
class _ImportingLoader:
    @staticmethod
    def load_module(fullname):
        return importlib.import_module(fullname)


class _FinderWithFindModule:
    def __init__(self, finder):
        self._finder = finder

    def find_module(self, fullname):
        return None if self._finder.find_spec(fullname) is None else _ImportingLoader()


def _fix_hydra_plugin_scan(module):
    if hasattr(importlib.machinery.FileFinder, "find_module"):
        return

    def walk_packages(*args, **kwargs):
        for info in pkgutil.walk_packages(*args, **kwargs):
            yield info._replace(module_finder=_FinderWithFindModule(info.module_finder))

    module.pkgutil = _module_with(pkgutil, walk_packages=walk_packages)


# --- 9. numpy2_api ----------------------------------------------------------------------
# numpy 2 removed np.compat, whose np.compat.long (the int type) fairseq's language-pair
# dataset names with --num-batch-buckets and its token-block dataset with break mode
# "eos"; it also removed np.percentile's interpolation= (now method=), which fairseq's
# length buckets pass.
def _percentile_with_interpolation(percentile):
    @functools.wraps(percentile)
    def percentile_accepting_interpolation(*args, interpolation=None, **kwargs):
        if interpolation is not None:
            kwargs["method"] = interpolation
        return percentile(*args, **kwargs)

    return percentile_accepting_interpolation


def _fix_numpy2_api(module):
    import inspect

    import numpy

    overrides = {}
    if not hasattr(numpy, "compat"):
        overrides["compat"] = types.SimpleNamespace(long=int)
    if "interpolation" not in inspect.signature(numpy.percentile).parameters:
        overrides["percentile"] = _percentile_with_interpolation(numpy.percentile)
    if overrides:
        module.np = _module_with(module.np, **overrides)


# --- 10. bitarray_rindex ----------------------------------------------------------------
# bitarray 3 removed util.rindex(a, value); bitarray >= 2.9 spells it a.index(value,
# right=True).  fairseq's Huffman coder calls it to strip a sentence's padding, so every
# read of a --dataset-impl huffman dataset failed.
def _rindex(array, sub_bitarray=1, start=0, stop=sys.maxsize):
    return array.index(sub_bitarray, start, stop, right=True)


def _fix_bitarray_rindex(module):
    if not hasattr(module.util, "rindex"):
        module.util = _module_with(module.util, rindex=_rindex)


# --- 11. typing_io ----------------------------------------------------------------------
# Python 3.13 removed the typing.io pseudo-module; antlr4 4.8 and hydra 1.0.7's grammar,
# both imported by every fairseq command, do `from typing.io import TextIO`.
def _fix_typing_io(typing):
    if "typing.io" in sys.modules:
        return
    typing_io = types.ModuleType("typing.io")
    typing_io.IO, typing_io.TextIO, typing_io.BinaryIO = typing.IO, typing.TextIO, typing.BinaryIO
    typing_io.__all__ = ["IO", "TextIO", "BinaryIO"]
    typing.io = typing_io
    sys.modules["typing.io"] = typing_io


# --- 12. unknown_model_message ----------------------------------------------------------
# A checkpoint (or --arch) whose model no registered model is, such as a plugin's model
# loaded without the plugin's --user-dir, fails in fairseq's own message: build_model passes
# the text of the model's config, braces and all, through str.format, which raises
# IndexError ("Replacement index 0 out of range") instead.  The model type is named here.
def _fix_unknown_model_message(module):
    build_model = module.build_model

    @functools.wraps(build_model)
    def build_model_naming_an_unknown_type(cfg, task, *args, **kwargs):
        model_type = getattr(cfg, "_name", None) or getattr(cfg, "arch", None)
        if model_type and model_type not in module.ARCH_MODEL_REGISTRY and model_type not in module.MODEL_REGISTRY:
            raise ValueError(
                f"unknown model (architecture) {model_type!r}: no loaded model registers it. A plugin's model needs "
                "the plugin loaded: --user-dir (fairseq-relpos's architectures: --user-dir fairseq_relpos; with "
                "the hub, import fairseq_relpos first)")
        return build_model(cfg, task, *args, **kwargs)

    module.build_model = build_model_naming_an_unknown_type


# --- 13. fp16_on_cpu --------------------------------------------------------------------
# fairseq-train --fp16 on the CPU (--cpu, or no CUDA device) reads the data and builds the
# model, then fails in its FP16 optimizer (torch.cuda.current_device()) with a bare
# "AssertionError: Torch not compiled with CUDA enabled".  Refused, by name, before any work.
def _fix_fp16_on_cpu(module):
    main = module.main

    @functools.wraps(main)
    def main_refusing_fp16_on_cpu(cfg, *args, **kwargs):
        import torch

        common = cfg.common
        if common.fp16 and (common.cpu or not torch.cuda.is_available()):  # --memory-efficient-fp16 sets it too
            raise ValueError(
                "--fp16 trains on CUDA devices only (fairseq's FP16 optimizer keeps its float32 copy of the "
                "parameters there), and this training runs on the CPU "
                f"({'--cpu' if common.cpu else 'no CUDA device'}): train without it (float32)")
        return main(cfg, *args, **kwargs)

    module.main = main_refusing_fp16_on_cpu


# --- 14. config_compose -----------------------------------------------------------------
# Every fairseq command turns its arguments into its configuration by composing it with
# Hydra (fairseq.dataclass.utils.convert_namespace_to_omegaconf: about 250 overrides, one
# per option), and Hydra 1.0 with omegaconf 2.0 spends 1.1-3.8 s of CPU on it, in deep copies
# of the whole configuration (and of Hydra's own) at every merge: as long as a small model's
# training.  The same composition is made here in one pass: FairseqConfig, the option of
# each config group that config.yaml's defaults and the overrides choose (the structured
# configs fairseq's registries put in Hydra's ConfigStore), then the value overrides, each
# parsed by Hydra's own override grammar and set by OmegaConf.update as Hydra sets it.
# Anything else Hydra can express (a config file, sweeps, +/~ overrides, packages) goes to
# Hydra's compose.
@functools.lru_cache(maxsize=None)
def _config_defaults(config_dir):
    """{group: option} of config.yaml's defaults list (fairseq's primary config), read once."""
    import yaml

    with open(os.path.join(config_dir, "config.yaml")) as f:
        defaults = yaml.safe_load(f).get("defaults", [])
    return {group: option for entry in defaults if isinstance(entry, dict) for group, option in entry.items()}


def _compose_in_one_pass(hydra_compose, config_dir, config_name=None, overrides=(), strict=None,
                         return_hydra_config=False):
    from hydra.core.config_store import ConfigStore
    from hydra.core.object_type import ObjectType
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import ConfigCompositionException
    from omegaconf import OmegaConf
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

    from fairseq.dataclass.configs import FairseqConfig

    def by_hydra():
        return hydra_compose(config_name, overrides=list(overrides), strict=strict,
                             return_hydra_config=return_hydra_config)

    parsed = OverridesParser.create().parse_overrides(overrides=list(overrides))
    if config_name != "config" or strict is None or return_hydra_config or any(
            o.is_sweep_override() or o.is_add() or o.is_delete() or o.pkg1 is not None for o in parsed):
        return by_hydra()
    choices = dict(_config_defaults(config_dir))  # a copy: the overrides change it
    values = []
    for override in parsed:
        if "." in override.key_or_group:
            values.append(override)
        elif override.key_or_group in choices:
            choices[override.key_or_group] = override.value()
        else:
            return by_hydra()
    store = ConfigStore.instance()
    options = {}
    for group, option in choices.items():
        if option is None:
            continue
        if not isinstance(option, str) or os.path.exists(os.path.join(config_dir, group, f"{option}.yaml")):
            return by_hydra()
        if store.get_type(f"{group}/{option}.yaml") is not ObjectType.CONFIG:
            return by_hydra()
        options[group] = store.load(f"{group}/{option}.yaml").node
    cfg = OmegaConf.structured(FairseqConfig)
    for group, node in options.items():
        cfg.merge_with({group: node})
    OmegaConf.set_struct(cfg, strict)
    for override in values:  # refused in Hydra's words
        try:
            OmegaConf.update(cfg, override.key_or_group, override.value(), merge=True)
        except (ConfigAttributeError, ConfigKeyError) as error:
            raise ConfigCompositionException(
                f"Could not override '{override.key_or_group}'.\nTo append to your config use +{override.input_line}"
            ) from error
        except OmegaConfBaseException as error:
            raise ConfigCompositionException(f"Error merging override {override.input_line}") from error
    return cfg


def _fix_config_compose(module):
    config_dir = os.path.join(os.path.dirname(module.__file__), "..", "config")
    module.compose = functools.partial(_compose_in_one_pass, module.compose, config_dir)


# --- 15. lazy_dynamo ---------------------------------------------------------------------
# torch.optim.Optimizer's add_param_group (called by its __init__), zero_grad, state_dict and
# load_state_dict are wrapped by torch._disable_dynamo, whose wrapper imports torch._dynamo at
# the first call (2 s of CPU: sympy, the tracer) only to run them outside a trace.  No trace
# can exist before torch._dynamo is imported (torch.compile imports it), so until then they
# run as they are, and from then on through torch._dynamo.disable as torch runs them; the
# wrapper keeps its result where it keeps its own (the function's __dynamo_disable).
_OPTIMIZER_METHODS = ("add_param_group", "zero_grad", "state_dict", "load_state_dict")


def _until_dynamo(fn):
    def call(*args, **kwargs):
        if "torch._dynamo" not in sys.modules:
            return fn(*args, **kwargs)
        import torch._dynamo

        fn.__dynamo_disable = torch._dynamo.disable(fn, True, wrapping=False)
        return fn.__dynamo_disable(*args, **kwargs)

    return call


def _fix_lazy_dynamo(module):
    from torch.optim import Optimizer

    for name in _OPTIMIZER_METHODS:
        wrapper = Optimizer.__dict__.get(name)
        fn = getattr(wrapper, "__wrapped__", None)
        # torch._compile._disable_dynamo's wrapper, which looks up fn.__dynamo_disable first
        if fn is not None and "__dynamo_disable" in wrapper.__code__.co_consts and \
                getattr(fn, "__dynamo_disable", None) is None:
            fn.__dynamo_disable = _until_dynamo(fn)


# --- 16. fast_encode_line ----------------------------------------------------------------
# Dictionary.encode_line, which binarizes every line of fairseq-preprocess (and of
# fairseq-interactive's input), sets its torch.IntTensor one element at a time: about 4 us a
# token, most of fairseq-preprocess's time.  The same lookups, in the same order, collected in
# a list and made an int32 tensor on the CPU once: the same tensor, the same calls of the
# consumer and the same symbols added.
def _fix_fast_encode_line(module):
    import torch

    stock = module.Dictionary.encode_line

    def encode_line(self, line, line_tokenizer=module.tokenize_line, add_if_not_exist=True, consumer=None,
                    append_eos=True, reverse_order=False):
        words = line_tokenizer(line)
        if reverse_order:
            words = list(reversed(words))
        lookup = self.add_symbol if add_if_not_exist else self.index
        ids = []
        for word in words:
            idx = lookup(word)
            if consumer is not None:
                consumer(word, idx)
            ids.append(idx)
        if append_eos:
            ids.append(self.eos_index)
        return torch.tensor(ids, dtype=torch.int32, device="cpu")

    encode_line.__wrapped__ = stock
    encode_line.__doc__ = stock.__doc__
    module.Dictionary.encode_line = encode_line


# fix name -> (module it patches when imported, patch); dataclass_hash runs at start-up.
FIXES = {
    "checkpoint_load": [
        ("fairseq.checkpoint_utils", _fix_checkpoint_load),
        ("fairseq.distributed.utils", _fix_broadcast_load),
        *[(f"fairseq_cli.{command}", _refusal_as_one_line) for command in _CHECKPOINT_COMMANDS],
    ],
    "better_transformer": [("fairseq.modules.transformer_layer", _fix_better_transformer)],
    "numpy_aliases": [
        ("fairseq.data.data_utils", _fix_numpy_aliases),
        ("fairseq.modules.dynamic_crf_layer", _fix_numpy_aliases),
    ],
    "sacrebleu_score": [("fairseq_cli.score", _fix_sacrebleu_score)],
    "cpu_ddp": [("fairseq.models.distributed_fairseq_model", _fix_cpu_ddp)],
    "user_dir_by_name": [("fairseq.utils", _fix_user_dir_by_name)],
    "hydra_plugin_scan": [("hydra.core.plugins", _fix_hydra_plugin_scan)],
    "numpy2_api": [
        ("fairseq.data.data_utils", _fix_numpy2_api),
        ("fairseq.data.language_pair_dataset", _fix_numpy2_api),
        ("fairseq.data.token_block_dataset", _fix_numpy2_api),
    ],
    "bitarray_rindex": [("fairseq.data.huffman.huffman_coder", _fix_bitarray_rindex)],
    "typing_io": [("typing", _fix_typing_io)],
    "unknown_model_message": [("fairseq.models", _fix_unknown_model_message)],
    "fp16_on_cpu": [("fairseq_cli.train", _fix_fp16_on_cpu)],
    "config_compose": [("fairseq.dataclass.utils", _fix_config_compose)],
    "lazy_dynamo": [("fairseq.optim.fairseq_optimizer", _fix_lazy_dynamo)],
    "fast_encode_line": [("fairseq.data.dictionary", _fix_fast_encode_line)],
}


class _PostImportPatcher(importlib.abc.MetaPathFinder):
    """Runs the patches registered for a module right after the module is executed."""

    def __init__(self, patches):
        self.patches = patches  # module name -> [patch]

    def find_spec(self, fullname, path, target=None):
        if fullname not in self.patches:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                self._wrap(spec.loader, self.patches[fullname])
                return spec
        return None

    @staticmethod
    def _wrap(loader, patches):
        exec_module = loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            for patch in patches:
                patch(module)

        loader.exec_module = exec_and_patch


def install():
    """Applies every enabled fix; idempotent."""
    if enabled("dataclass_hash"):
        _fix_dataclass_hash()
    if any(isinstance(finder, _PostImportPatcher) for finder in sys.meta_path):
        return
    patches = {}
    for name, targets in FIXES.items():
        if enabled(name):
            for module_name, patch in targets:
                patches.setdefault(module_name, []).append(patch)
    already_imported = [name for name in patches if name in sys.modules]
    for module_name in already_imported:
        for patch in patches.pop(module_name):
            patch(sys.modules[module_name])
    sys.meta_path.insert(0, _PostImportPatcher(patches))


install()
