"""Speed and memory of every architecture, relative to ``transformer_abs``.

    python -m fairseq_relpos.benchmark                      # every arch, Transformer-base layers
    python -m fairseq_relpos.benchmark --archs transformer_abs,transformer_rope --device cuda

Training: forward + backward + an SGD step on a batch of ``--batch`` sentences of
``--length`` tokens (SGD keeps no state, so that every model fits in memory at once; the
optimizer's cost is the same for every arch).  Inference: fairseq's beam search
(``--beam``) over the same sources.  Every model is built and warmed up first; then each of
``--repeats`` rounds times every arch once, in a rotated order, so that drift of the
machine hits all archs alike.  Each round gives a ratio to ``transformer_abs`` measured
next to it; the table shows the median ratio and the spread (min–max) over the rounds.
Peak memory is that of one training step: the CUDA allocator's peak on a GPU; on a CPU the
peak growth of the resident set of a fresh process over its first training step
(``--memory-probe``; Linux's VmHWM, reset before the step): activations and gradients.  Timings are measured here, never
asserted in tests.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time

import torch
from fairseq.data import Dictionary
from fairseq.sequence_generator import SequenceGenerator

from . import ARCHITECTURES, build_standalone_model, count_parameters

BASELINE = "transformer_abs"


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
    """One arch's model with a training step and a beam search over fixed random batches."""

    def __init__(self, arch, options, device):
        dims = dict(
            encoder_layers=options.layers, decoder_layers=options.layers,
            encoder_embed_dim=options.dim, decoder_embed_dim=options.dim,
            encoder_ffn_embed_dim=4 * options.dim, decoder_ffn_embed_dim=4 * options.dim,
            encoder_attention_heads=options.heads, decoder_attention_heads=options.heads,
        )
        torch.manual_seed(0)
        dictionary = Dictionary()
        for index in range(options.vocab - dictionary.nspecial):
            dictionary.add_symbol(f"w{index}")
        self.model = build_standalone_model(arch, dictionary, **dims).to(device)
        self.parameters = count_parameters(self.model)
        generator = torch.Generator().manual_seed(1)
        shape = (options.batch, options.length)
        self.src = torch.randint(dictionary.nspecial, len(dictionary), shape, generator=generator).to(device)
        self.prev = torch.randint(dictionary.nspecial, len(dictionary), shape, generator=generator).to(device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=1e-6)
        self.search = SequenceGenerator([self.model], dictionary, beam_size=options.beam,
                                        max_len_a=0, max_len_b=options.length, min_len=options.length)
        lengths = torch.full((options.batch,), options.length, device=device)
        self.sample = {"net_input": {"src_tokens": self.src, "src_lengths": lengths}}

    def train_step(self):
        self.model.train()
        logits, _ = self.model(self.src, None, self.prev)
        loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), self.prev)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def decode(self):  # generate() runs under no_grad; train_step() left the model in train mode
        self.model.eval()
        self.search.generate([self.model], self.sample)


def peak_training_memory(arch, options, device, argv) -> float:
    """MiB that one training step adds at its peak."""
    if device.type == "cuda":
        workload = Workload(arch, options, device)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        workload.train_step()
        torch.cuda.synchronize()
        return (torch.cuda.max_memory_allocated() - before) / 2 ** 20
    probe = subprocess.run([sys.executable, "-m", "fairseq_relpos.benchmark", *argv, "--archs", arch,
                            "--memory-probe"], capture_output=True, text=True, check=True)
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
    workload.train_step()
    print(json.dumps({"peak_mib": resident_mib("VmHWM") - before}))


def _without_archs(argv):
    """The command line less its --archs, for the memory probe of one arch."""
    kept, skip_next = [], False
    for arg in argv:
        if skip_next or arg.startswith("--archs="):
            skip_next = False
            continue
        skip_next = arg == "--archs"
        if not skip_next:
            kept.append(arg)
    return kept


def spread(ratios):
    return f"{statistics.median(ratios):.3f}x ({min(ratios):.2f}–{max(ratios):.2f})"


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
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds over all archs")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurement")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--memory-probe", action="store_true", help=argparse.SUPPRESS)
    argv = sys.argv[1:] if argv is None else argv
    options = parser.parse_args(argv)
    archs = list(dict.fromkeys([BASELINE] + options.archs.split(",")))
    unknown = sorted(set(archs) - set(ARCHITECTURES))
    if unknown:
        parser.error(f"--archs: unknown architecture(s) {', '.join(unknown)}; expected some of "
                     f"{', '.join(ARCHITECTURES)}")
    if options.memory_probe:
        return memory_probe(archs[-1], options)
    device = torch.device(options.device)
    shared_argv = _without_archs(argv)

    workloads = {arch: Workload(arch, options, device) for arch in archs}
    for workload in workloads.values():  # warm-up
        workload.train_step()
        workload.decode()
    times = {arch: {"train": [], "decode": []} for arch in archs}
    for round_index in range(options.repeats):
        order = archs[round_index % len(archs):] + archs[:round_index % len(archs)]
        for arch in order:
            times[arch]["train"].append(seconds(workloads[arch].train_step, device))
            times[arch]["decode"].append(seconds(workloads[arch].decode, device))
        print(f"round {round_index + 1}/{options.repeats} done", file=sys.stderr)
    memory = {} if options.no_memory else {
        arch: peak_training_memory(arch, options, device, shared_argv) for arch in archs}

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    print(f"{name}; {options.layers}+{options.layers} layers, d {options.dim}, {options.heads} heads, "
          f"vocab {options.vocab}, batch {options.batch}x{options.length} tokens, beam {options.beam}, "
          f"{options.repeats} interleaved rounds; ratio to {BASELINE}: median (min–max over rounds)")
    print("| arch | parameters | train step (s) | train vs abs | beam search (s) | beam vs abs | peak train MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for arch in archs:
        row = [arch, f"{workloads[arch].parameters:,}"]
        for kind in ("train", "decode"):
            ratios = [mine / base for mine, base in zip(times[arch][kind], times[BASELINE][kind])]
            row += [f"{statistics.median(times[arch][kind]):.3f}", spread(ratios)]
        row.append(f"{memory[arch]:.0f}" if arch in memory else "-")
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
