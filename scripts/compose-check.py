"""Holds the CONFIG_COMPOSE fix (fairseq_relpos_compat) against Hydra's own composition, and
times both: for a training command line per task, criterion, optimizer, learning-rate
scheduler, BPE, tokenizer and scorer fairseq and this plugin register, and per model with a
dataclass of its own (its first architecture), convert_namespace_to_omegaconf runs once with
each composition; the configurations must be the same (keys in order, values and types) or
both refused alike.  A line per command (SAME or DIFF, Hydra's and the one pass's seconds),
then the counts and median times.  Exits 1 on any difference.

    .venv/bin/python scripts/compose-check.py [--data DIR]
"""
import argparse
import statistics
import sys
import tempfile
import time

from omegaconf import DictConfig, ListConfig

import fairseq_relpos  # noqa: F401  (registers the plugin's task and architectures)
import hydra.experimental
from fairseq import options
from fairseq.dataclass import utils
from fairseq.models import ARCH_MODEL_NAME_REGISTRY, ARCH_MODEL_REGISTRY, MODEL_DATACLASS_REGISTRY
from fairseq.registry import REGISTRIES
from fairseq.tasks import TASK_REGISTRY


def command_lines(data):
    base = ["--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "100"]
    plugin = [data, "--user-dir", "fairseq_relpos", "--arch", "transformer_rel"]
    for task in sorted(TASK_REGISTRY):
        yield [data, "--user-dir", "fairseq_relpos", "--task", task, "--arch", "transformer_lm", *base]
    for group, registry in REGISTRIES.items():
        for name in sorted(registry["registry"]):
            if group == "optimizer":
                yield [*plugin, "--optimizer", name, "--lr", "1e-3", "--max-tokens", "100"]
            else:
                yield [*plugin, f"--{group.replace('_', '-')}", name, *base]
    models = {}
    for arch in sorted(ARCH_MODEL_REGISTRY):
        models.setdefault(ARCH_MODEL_NAME_REGISTRY[arch], arch)
    for model, arch in models.items():
        if model in MODEL_DATACLASS_REGISTRY:
            yield [data, "--arch", arch, *base]


def composed(args):
    """The configuration's nested items with their types, or the refusal."""
    def items(node):
        if isinstance(node, DictConfig):
            return [(key, items(node[key])) for key in node]
        if isinstance(node, ListConfig):
            return [items(value) for value in node]
        if isinstance(node, argparse.Namespace):
            return ("Namespace", sorted((key, repr(value)) for key, value in vars(node).items()))
        return type(node).__name__, repr(node)

    try:
        return items(utils.convert_namespace_to_omegaconf(args))
    except Exception as error:
        cause = error.__cause__
        return "refused", type(error).__name__, str(error), type(cause).__name__, str(cause)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=tempfile.gettempdir(), help="the data folder the command lines name")
    data = parser.parse_args().data
    one_pass, by_hydra = utils.compose, hydra.experimental.compose
    if one_pass is by_hydra:
        sys.exit("CONFIG_COMPOSE is switched off (FAIRSEQ_RELPOS_COMPAT=0 or FAIRSEQ_RELPOS_COMPAT_CONFIG_COMPOSE=0): "
                 "nothing to check")
    counts, seconds = {"SAME": 0, "DIFF": 0, "refused by both": 0, "not parsed": 0}, {"hydra": [], "one pass": []}
    for argv in command_lines(data):
        try:
            args = options.parse_args_and_arch(options.get_training_parser(), argv)
        except SystemExit:  # a task or model that needs options of its own
            counts["not parsed"] += 1
            continue
        results = {}
        for name, compose in (("hydra", by_hydra), ("one pass", one_pass)):
            utils.compose = compose
            start = time.perf_counter()
            results[name] = composed(args)
            seconds[name].append(time.perf_counter() - start)
        utils.compose = one_pass
        verdict = "SAME" if results["hydra"] == results["one pass"] else "DIFF"
        counts[verdict] += 1
        counts["refused by both"] += verdict == "SAME" and results["hydra"][0] == "refused"
        print(f"{verdict} {seconds['hydra'][-1]:.2f} s {seconds['one pass'][-1]:.2f} s  {' '.join(argv[1:])}",
              flush=True)
    print(", ".join(f"{key}: {value}" for key, value in counts.items()))
    print("median seconds: " + ", ".join(f"{name} {statistics.median(values):.2f}" for name, values in seconds.items()))
    sys.exit(1 if counts["DIFF"] else 0)


if __name__ == "__main__":
    main()
