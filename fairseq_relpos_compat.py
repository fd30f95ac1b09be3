"""Start-up fixes that let fairseq 0.12.2 run on Python >= 3.11, torch >= 2.6 and numpy 2.

Installed with a ``fairseq_relpos_compat.pth`` file, so this module is imported when the
interpreter starts; that is what makes the stock ``fairseq-*`` console scripts work.  It
must stay cheap: it imports nothing heavy and patches each fairseq module only when that
module is first imported (a post-import hook), never fairseq eagerly.

Every fix touches fairseq or hydra classes only, is a no-op on a stack that does not need
it, and can be switched off:

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
import pkgutil
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


# --- 1. dataclass_hash ------------------------------------------------------------------
# Python 3.11 rejects a dataclass field whose default is an instance of an unhashable
# class; fairseq's and hydra 1.0.7's configs nest dataclass instances as defaults.  Giving
# those classes identity hashing is what Python < 3.11 accepted implicitly.
_CONFIG_PACKAGES = ("fairseq", "fairseq_cli", "hydra")


def _fix_dataclass_hash():
    if sys.version_info < (3, 11) or getattr(dataclasses, "_relpos_patched", False):
        return
    process_class = dataclasses._process_class

    @functools.wraps(process_class)
    def process_class_with_identity_hash(cls, *args, **kwargs):
        cls = process_class(cls, *args, **kwargs)
        if cls.__module__.split(".")[0] in _CONFIG_PACKAGES and cls.__hash__ is None:
            cls.__hash__ = object.__hash__
        return cls

    dataclasses._process_class = process_class_with_identity_hash
    dataclasses._relpos_patched = True


# --- 2. checkpoint_load -----------------------------------------------------------------
# torch >= 2.6 loads with weights_only=True by default; fairseq checkpoints (and the objects
# fairseq broadcasts between workers) hold argparse/omegaconf objects.  Only fairseq's own
# torch.load calls get weights_only=False: they read the user's own checkpoints.
def _torch_with_full_load(torch):
    if _version_tuple(torch.__version__) < (2, 6):
        return torch
    shim = types.ModuleType("torch")
    shim.__dict__.update(torch.__dict__)
    shim.load = functools.partial(torch.load, weights_only=False)
    return shim


def _fix_checkpoint_load(module):
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
    import numpy

    if hasattr(numpy, "float") and hasattr(numpy, "int"):
        return
    shim = types.ModuleType("numpy")
    shim.__dict__.update(numpy.__dict__)
    shim.int, shim.float = int, float
    module.np = shim


# --- 5. sacrebleu_score -----------------------------------------------------------------
# fairseq-score --sacrebleu passes open files (lines keep their newline) and a list of one
# file to sacrebleu; sacrebleu 2.x wants lists of strings.
def _fix_sacrebleu_score(module):
    import sacrebleu

    if _version_tuple(sacrebleu.__version__) < (2, 0):
        return
    shim = types.ModuleType("sacrebleu")
    shim.__dict__.update(sacrebleu.__dict__)

    def corpus_bleu(hypotheses, references, **kwargs):
        hypotheses = [line.rstrip("\n") for line in hypotheses]
        references = [[line.rstrip("\n") for line in ref] for ref in references]
        return sacrebleu.corpus_bleu(hypotheses, references, **kwargs)

    shim.corpus_bleu = corpus_bleu
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

    shim = types.ModuleType("pkgutil")
    shim.__dict__.update(pkgutil.__dict__)
    shim.walk_packages = walk_packages
    module.pkgutil = shim


# fix name -> (module it patches when imported, patch); dataclass_hash runs at start-up.
FIXES = {
    "checkpoint_load": [
        ("fairseq.checkpoint_utils", _fix_checkpoint_load),
        ("fairseq.distributed.utils", _fix_checkpoint_load),
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
