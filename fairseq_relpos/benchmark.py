"""Parameter counts and speed of each architecture, relative to ``transformer_abs``.

    python -m fairseq_relpos.benchmark                      # Transformer-base, CPU-sized run
    python -m fairseq_relpos.benchmark --archs transformer_abs,transformer_rel --device cuda

Training speed: forward + backward + Adam step on a batch of ``--batch`` sentences of
``--length`` tokens.  Inference speed: fairseq's beam search (``--beam``) over the same
sources.  Medians of ``--repeats`` timed runs after one warm-up.  Timings are measured
here, never asserted in tests.
"""
import argparse
import statistics
import time

import torch
from fairseq.data import Dictionary
from fairseq.sequence_generator import SequenceGenerator

from . import STUDY_ARCHITECTURES, build_standalone_model, count_parameters


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def median_seconds(step, repeats, device):
    step()  # warm-up
    times = []
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        step()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(arch, options, device):
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
    model = build_standalone_model(arch, dictionary, **dims)
    model.to(device)
    generator = torch.Generator().manual_seed(1)
    shape = (options.batch, options.length)
    src = torch.randint(dictionary.nspecial, len(dictionary), shape, generator=generator).to(device)
    prev = torch.randint(dictionary.nspecial, len(dictionary), shape, generator=generator).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)

    def train_step():
        model.train()
        logits, _ = model(src, None, prev)
        loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), prev)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    search = SequenceGenerator([model], dictionary, beam_size=options.beam,
                               max_len_a=0, max_len_b=options.length, min_len=options.length)
    lengths = torch.full((options.batch,), options.length, device=device)
    sample = {"net_input": {"src_tokens": src, "src_lengths": lengths}}

    def decode():  # generate() runs under no_grad; train_step() left the model in train mode
        model.eval()
        search.generate([model], sample)

    return {
        "parameters": count_parameters(model),
        "train_s": median_seconds(train_step, options.repeats, device),
        "decode_s": median_seconds(decode, options.repeats, device),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archs", default=",".join(STUDY_ARCHITECTURES), help="comma-separated architectures")
    parser.add_argument("--vocab", type=int, default=32000, help="vocabulary size of each side")
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--batch", type=int, default=16, help="sentences per batch")
    parser.add_argument("--length", type=int, default=64, help="tokens per source and target")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    options = parser.parse_args(argv)
    archs = options.archs.split(",")
    unknown = sorted(set(archs) - set(STUDY_ARCHITECTURES))
    if unknown:
        parser.error(f"--archs: unknown architecture(s) {', '.join(unknown)}")
    device = torch.device(options.device)

    results = {arch: measure(arch, options, device) for arch in archs}
    reference = results.get("transformer_abs")
    print(f"device {device}, {options.layers}+{options.layers} layers, d {options.dim}, {options.heads} heads, "
          f"vocab {options.vocab}, batch {options.batch}x{options.length} tokens, beam {options.beam}")
    print("| arch | parameters | train step (s) | vs abs | beam search (s) | vs abs |")
    print("|---|---:|---:|---:|---:|---:|")
    for arch, result in results.items():
        train_ratio = f"{result['train_s'] / reference['train_s']:.2f}x" if reference else "-"
        decode_ratio = f"{result['decode_s'] / reference['decode_s']:.2f}x" if reference else "-"
        print(f"| {arch} | {result['parameters']:,} | {result['train_s']:.3f} | {train_ratio} "
              f"| {result['decode_s']:.3f} | {decode_ratio} |")


if __name__ == "__main__":
    main()
