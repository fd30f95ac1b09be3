"""Speed and memory of every architecture, relative to ``transformer_abs``, and the attention
kernel each of its layers ran.

    python -m fairseq_relpos.benchmark                      # every arch, Transformer-base layers
    python -m fairseq_relpos.benchmark --device cuda --dtype fp16 --padding --lengths 50,100,200,400

Training: forward + backward + an SGD step on a batch of ``--batch`` sentences of
``--length`` tokens (each of ``--lengths``), in ``--dtype`` (fp16: the model in half
precision, as ``fairseq-train --fp16`` has it; SGD keeps no state, so that every model fits
in memory at once, and the optimizer's cost is the same for every arch); with ``--padding``,
sentences of ``length/2 … length`` tokens, sources padded on the left and targets on the
right, as fairseq batches them.  Inference: fairseq's beam search (``--beam``) over the same
sources, ``length`` tokens a hypothesis.  Every model is built first; at each length every
model is warmed up, then each of ``--repeats`` rounds times every arch once, in a rotated order, so that drift of the
machine hits all archs alike.  Each round gives a ratio of times to ``transformer_abs``
measured next to it; the table shows the median ratio and the spread (min–max) over the
rounds, and the median throughput: target tokens per second in training (fairseq's wps),
sentences per second in beam search.  Peak memory is that of one training step: the CUDA
allocator's peak on a GPU; on a CPU the peak growth of the resident set of a fresh process
over its first training step (``--memory-probe``; Linux's VmHWM, reset before the step):
activations and gradients.  The kernels are those each attention layer ran in one training
step and one beam search (``modules/attention.py``'s ``recorded_kernels``).  Timings are
measured here, never asserted in tests.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import defaultdict

import torch
from fairseq.data import Dictionary
from fairseq.sequence_generator import SequenceGenerator

from . import ARCHITECTURES, build_standalone_model, count_parameters
from .models.architectures import flex_covers
from .modules.attention import ATTENTION_IMPLS, recorded_kernels

BASELINE = "transformer_abs"
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
#: the kernels' names in the tables
KERNEL_NAMES = {"flash_attention": "flash", "efficient_attention": "efficient", "cudnn_attention": "cudnn"}
#: attention layers by kind: (column, the end of the layer's module name)
LAYER_KINDS = (("encoder self-attn", "encoder", "self_attn"), ("decoder self-attn", "decoder", "self_attn"),
               ("enc-dec attn", "decoder", "encoder_attn"))


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def seconds(step, device) -> float:
    synchronize(device)
    start = time.perf_counter()
    step()
    synchronize(device)
    return time.perf_counter() - start


class Workload:
    """One arch's model, with a training step and a beam search over fixed random batches of
    each length."""

    def __init__(self, arch, options, device):
        dims = dict(
            encoder_layers=options.layers, decoder_layers=options.layers,
            encoder_embed_dim=options.dim, decoder_embed_dim=options.dim,
            encoder_ffn_embed_dim=4 * options.dim, decoder_ffn_embed_dim=4 * options.dim,
            encoder_attention_heads=options.heads, decoder_attention_heads=options.heads,
        )
        self.attention_impl = options.attention_impl if flex_covers(arch) else "reference"
        torch.manual_seed(0)
        dictionary = Dictionary()
        for index in range(options.vocab - dictionary.nspecial):
            dictionary.add_symbol(f"w{index}")
        self.dictionary = dictionary
        self.model = build_standalone_model(arch, dictionary, attention_impl=self.attention_impl, **dims)
        self.model.to(device=device, dtype=DTYPES[options.dtype])
        self.parameters = count_parameters(self.model)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=1e-6)
        self.options, self.device = options, device
        self.batches = {length: self._batch(length) for length in options.lengths}

    def _batch(self, length):
        """Sources, targets, decoder inputs and a beam search over ``length`` tokens."""
        dictionary, options = self.dictionary, self.options
        generator = torch.Generator().manual_seed(length)
        shape = (options.batch, length)
        words = {side: torch.randint(dictionary.nspecial, len(dictionary), shape, generator=generator)
                 for side in ("src", "tgt")}
        if options.padding:
            lengths = {side: torch.randint(max(1, length // 2), length + 1, (options.batch,), generator=generator)
                       for side in words}
            columns = torch.arange(length)
            src_padding = columns >= lengths["src"].unsqueeze(1)
            words["src"] = words["src"].masked_fill(src_padding, dictionary.pad()).flip(1)  # padded on the left
            words["tgt"] = words["tgt"].masked_fill(columns >= lengths["tgt"].unsqueeze(1), dictionary.pad())
        src, tgt = words["src"].to(self.device), words["tgt"].to(self.device)
        prev = torch.cat([torch.full_like(tgt[:, :1], dictionary.eos()), tgt[:, :-1]], dim=1)
        prev = prev.masked_fill(tgt.eq(dictionary.pad()), dictionary.pad())
        search = SequenceGenerator([self.model], dictionary, beam_size=options.beam, max_len_a=0, max_len_b=length,
                                   min_len=length)
        sample = {"net_input": {"src_tokens": src, "src_lengths": src.ne(dictionary.pad()).sum(1)}}
        return dict(src=src, tgt=tgt, prev=prev, search=search, sample=sample,
                    target_tokens=int(tgt.ne(dictionary.pad()).sum()))

    def train_step(self, length):
        batch = self.batches[length]
        self.model.train()
        logits, _ = self.model(batch["src"], None, batch["prev"])
        loss = torch.nn.functional.cross_entropy(logits.float().transpose(1, 2), batch["tgt"],
                                                 ignore_index=self.dictionary.pad())
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def decode(self, length):  # generate() runs under no_grad; train_step() left the model in train mode
        batch = self.batches[length]
        self.model.eval()
        batch["search"].generate([self.model], batch["sample"])

    def kernels(self, length):
        """Per kind of attention layer, the kernels its layers ran in one training step and
        one beam search: {(column, "train" | "beam"): {kernel, …}}."""
        names = {module: name for name, module in self.model.named_modules()}
        used = defaultdict(set)
        for phase, step in (("train", self.train_step), ("beam", self.decode)):
            with recorded_kernels() as kernels:
                step(length)
            for module, kernel in kernels:
                name = names[module]
                for column, stack, layer in LAYER_KINDS:
                    if name.startswith(stack) and name.endswith(layer):
                        used[column, phase].add(KERNEL_NAMES.get(kernel, kernel))
        return used


def peak_training_memory(workload, arch, length, options, device, argv) -> float:
    """MiB that one training step adds at its peak."""
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        workload.train_step(length)
        torch.cuda.synchronize()
        return (torch.cuda.max_memory_allocated() - before) / 2 ** 20
    probe = subprocess.run([sys.executable, "-m", "fairseq_relpos.benchmark", *argv, "--archs", arch,
                            "--lengths", str(length), "--memory-probe"], capture_output=True, text=True, check=True)
    return json.loads(probe.stdout.strip().splitlines()[-1])["peak_mib"]


def resident_mib(field: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (the peak since the last reset) of this process, in MiB.
    Not getrusage's ru_maxrss: Linux carries that over from the parent across exec."""
    with open("/proc/self/status") as status:
        kib = next(int(line.split()[1]) for line in status if line.startswith(field + ":"))
    return kib / 1024


def memory_probe(arch, options):
    workload = Workload(arch, options, torch.device("cpu"))
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # resets VmHWM to the current resident set
    before = resident_mib("VmRSS")
    workload.train_step(options.lengths[0])
    print(json.dumps({"peak_mib": resident_mib("VmHWM") - before}))


def _without(argv, options_with_values):
    """The command line less the given options and their values, for the memory probe."""
    kept, skip_next = [], False
    for arg in argv:
        if skip_next or any(arg.startswith(option + "=") for option in options_with_values):
            skip_next = False
            continue
        skip_next = arg in options_with_values
        if not skip_next:
            kept.append(arg)
    return kept


def spread(ratios):
    return f"{statistics.median(ratios):.3f}x ({min(ratios):.2f}–{max(ratios):.2f})"


def lengths_option(text):
    try:
        lengths = [int(length) for length in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated token counts, got {text!r}") from None
    if not lengths or min(lengths) < 2:
        raise argparse.ArgumentTypeError(f"expected lengths of at least 2 tokens, got {text!r}")
    return lengths


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archs", default=",".join(ARCHITECTURES),
                        help=f"comma-separated architectures; {BASELINE} is added as the baseline")
    parser.add_argument("--vocab", type=int, default=8000, help="vocabulary size of each side")
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--batch", type=int, default=16, help="sentences per batch")
    parser.add_argument("--length", type=int, default=64, help="tokens per source and target")
    parser.add_argument("--lengths", type=lengths_option,
                        help="comma-separated lengths, each measured (a table each); instead of --length")
    parser.add_argument("--padding", action="store_true",
                        help="sentences of length/2 … length tokens in a batch, padded as fairseq pads them")
    parser.add_argument("--dtype", choices=DTYPES, default="fp32",
                        help="the models' precision (fp16: as fairseq-train --fp16 has them)")
    parser.add_argument("--attention-impl", choices=ATTENTION_IMPLS, default="reference",
                        help="flex for every arch it covers (the others: reference)")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds over all archs")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurement")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--json", metavar="FILE", help="also write every table's numbers to FILE")
    parser.add_argument("--memory-probe", action="store_true", help=argparse.SUPPRESS)
    argv = sys.argv[1:] if argv is None else argv
    options = parser.parse_args(argv)
    options.lengths = options.lengths or [options.length]
    archs = list(dict.fromkeys([BASELINE] + options.archs.split(",")))
    unknown = sorted(set(archs) - set(ARCHITECTURES))
    if unknown:
        parser.error(f"--archs: unknown architecture(s) {', '.join(unknown)}; expected some of "
                     f"{', '.join(ARCHITECTURES)}")
    device = torch.device(options.device)
    if options.attention_impl == "flex" and device.type != "cuda":
        parser.error("--attention-impl flex: expected --device cuda (FlexAttention has no backward pass on the CPU)")
    if options.memory_probe:
        return memory_probe(archs[-1], options)
    probe_argv = _without(argv, ("--archs", "--lengths", "--length", "--json"))

    workloads = {arch: Workload(arch, options, device) for arch in archs}
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    results = []
    for length in options.lengths:
        # warm-up (and FlexAttention's compilation) length by length, like the tables: a run
        # cut short keeps every length it finished
        for workload in workloads.values():
            workload.train_step(length)
            workload.decode(length)
        times = {arch: {"train": [], "decode": []} for arch in archs}
        for round_index in range(options.repeats):
            order = archs[round_index % len(archs):] + archs[:round_index % len(archs)]
            for arch in order:
                times[arch]["train"].append(seconds(lambda: workloads[arch].train_step(length), device))
                times[arch]["decode"].append(seconds(lambda: workloads[arch].decode(length), device))
            print(f"length {length}: round {round_index + 1}/{options.repeats} done", file=sys.stderr)
        memory = {} if options.no_memory else {
            arch: peak_training_memory(workloads[arch], arch, length, options, device, probe_argv) for arch in archs}
        kernels = {arch: workloads[arch].kernels(length) for arch in archs}
        print_tables(name, options, length, archs, workloads, times, memory, kernels)
        results.append(length_record(options, length, archs, workloads, times, memory, kernels))
        if options.json:  # after each length, so that a run cut short keeps the lengths it measured
            with open(options.json, "w", encoding="utf-8") as out:
                json.dump({"device": name, "torch": torch.__version__, "cuda": torch.version.cuda,
                           "options": {key: value for key, value in vars(options).items() if key != "memory_probe"},
                           "lengths": results}, out, indent=1)


def length_record(options, length, archs, workloads, times, memory, kernels) -> dict:
    """One length's tables as numbers: per arch the seconds of every round (training step and
    beam search), the ratios to the baseline's in the same round, peak MiB and kernels."""
    rows = {}
    for arch in archs:
        workload = workloads[arch]
        row = {"attention": workload.attention_impl, "parameters": workload.parameters,
               "target_tokens": workload.batches[length]["target_tokens"], "peak_train_mib": memory.get(arch),
               "kernels": {f"{column} {phase}": sorted(kernels[arch][column, phase])
                           for column, _, _ in LAYER_KINDS for phase in ("train", "beam")}}
        for kind in ("train", "decode"):
            ratios = [mine / base for mine, base in zip(times[arch][kind], times[BASELINE][kind])]
            row[kind] = {"seconds": times[arch][kind], "ratio_median": statistics.median(ratios),
                         "ratio_min": min(ratios), "ratio_max": max(ratios)}
        rows[arch] = row
    return {"length": length, "archs": rows}


def print_tables(name, options, length, archs, workloads, times, memory, kernels):
    print(f"\n{name}; {options.layers}+{options.layers} layers, d {options.dim}, {options.heads} heads, "
          f"vocab {options.vocab}, {options.dtype}, batch {options.batch}x{length} tokens"
          f"{' (padded: length/2 … length)' if options.padding else ''}, beam {options.beam}, "
          f"{options.repeats} interleaved rounds; time ratio to {BASELINE}: median (min–max over rounds)")
    print("| arch | attention | parameters | train tokens/s | train time vs abs | beam sentences/s "
          "| beam time vs abs | peak train MiB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for arch in archs:
        workload = workloads[arch]
        batch = workload.batches[length]
        row = [arch, workload.attention_impl, f"{workload.parameters:,}"]
        for kind, done in (("train", batch["target_tokens"]), ("decode", options.batch)):
            ratios = [mine / base for mine, base in zip(times[arch][kind], times[BASELINE][kind])]
            row += [f"{done / statistics.median(times[arch][kind]):,.0f}", spread(ratios)]
        row.append(f"{memory[arch]:.0f}" if arch in memory else "-")
        print("| " + " | ".join(row) + " |")
    print(f"\nKernels each kind of attention layer ran (length {length}; training step / beam search):")
    print("| arch | " + " | ".join(column for column, _, _ in LAYER_KINDS) + " |")
    print("|---|" + "---|" * len(LAYER_KINDS))
    for arch in archs:
        cells = [" / ".join("+".join(sorted(kernels[arch][column, phase])) or "-" for phase in ("train", "beam"))
                 for column, _, _ in LAYER_KINDS]
        print(f"| {arch} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
