"""The bands recipe (scripts/reproduce/bands.sh): length as a domain (Variš and Bojar 2021).
Each scheme is trained once per length band (the training pairs whose length is in the band,
and the dev pairs in it), each system translates a test set that spans every band, and the
band matrix of each scheme (python -m relpos_analysis.bands) scores every train band on every
test band: BLEU and the failure columns with 95% bootstrap intervals, the tables in every
format and a heatmap with the diagonal marked.

The data: the synthetic pair (OUT/data, sentences of every length the bands need), Tatoeba
(OUT/data, prepare-tatoeba.sh's split) or a folder prepared beforehand (--data DIR, e.g. by
prepare-corpus.sh), into which the recipe adds each band's data-bin/bandLO-HI as
prepare-*.sh --train-band makes it.  OUT/SCHEME/bandLO-HI holds each system and its
translations, OUT/matrix the band matrix.
"""
import dataclasses
import math
import time
from pathlib import Path
from typing import List, Sequence

from relpos_analysis.buckets import Bucket, band_spec

from ..engine import Display, Graph, Job, Launch, OutDir, ProgressConsole, Step, StepError, run
from ..engine.step import REPO
from ..tools.filter_pairs import BAND_SIDES
from . import tool
from .archs import check_archs
from .data import Prepared, band_folder, band_steps, preparation_and_test_sets, preparation_of
from .environment import RECIPE_ENVIRONMENT, RecipeEnvironment
from .options import Parser, absolute, band_list, name_list
from .prepare import toy_parser, toy_preparation
from .presets import TATOEBA_LIMIT
from .systems import (TOY, SystemsRun, add_run_options, systems_run, demo_training, folder_profile, refuse_unless_ours,
                      tatoeba_profile, train_step, translate_steps)

# bands of the longer side in subword tokens; on the synthetic pair a sentence of N source
# words has about 2.4 N subword tokens on its longer side, so that every band is reached
DEFAULT_BANDS = {"synthetic": ("1:15,16:30,31:45", "1:15,16:30,31:45,46:60"),
                 # Tatoeba's training pairs have at most 16 Moses tokens (its split); tested to 2x that
                 "tatoeba": ("1:8,9:16", "1:8,9:16,17:24,25:32")}
QUICK_BANDS = ("1:15,16:30", "1:15,16:30,31:45")
DEFAULT_UPDATES = {"synthetic": 2300, "tatoeba": 2500}  # the demo's and tatoeba.sh's budgets
# the synthetic pair's source words per subword token of the longer side are about 1/2.4:
# with 1/2 the longest test sentences reach beyond the highest test band
SOURCE_WORDS_PER_TOKEN = 0.5


@dataclasses.dataclass
class Bands:
    """The recipe's systems and steps for one command line."""

    run: SystemsRun
    bands: List[Bucket]
    test_bands: List[Bucket]
    side: str
    test_set: str
    bootstrap: int

    def folder(self, arch: str, band: Bucket) -> Path:
        return self.run.out / arch / band_folder(band)

    def system_steps(self, arch: str, band: Bucket) -> List[Step]:
        """ARCH trained on the band (the profile's model, learning rate and --updates; the best
        checkpoint on the band's dev pairs), then translating the test set."""
        save, label = self.folder(arch, band), f"{arch}/{band_folder(band)}"
        training = demo_training(self.run, arch, self.run.seed, save, self.run.profile.lr, data_bin=band_folder(band))
        return [train_step(self.run, training, label=label),
                *translate_steps(self.run, save, test_sets=[self.test_set], label=label)]

    def lengths_file(self) -> Path:
        """The file whose whitespace tokens are each test pair's length, on the bands' side."""
        testset = self.run.data / "testsets" / self.test_set
        src, tgt = self.run.profile.langs
        return {"longer": testset / "longer-side", "source": testset / f"seg.{src}",
                "target": testset / f"seg.{tgt}"}[self.side]

    def matrix_step(self) -> Step:
        testset = self.run.data / "testsets" / self.test_set
        out = self.run.out / "matrix"
        reference = testset / f"raw.{self.run.profile.langs[1]}"
        systems, inputs = [], [reference, self.lengths_file()]
        for arch in self.run.archs:
            outs = [self.folder(arch, band) / self.test_set for band in self.bands]
            hyps, scores = [o / "hyp.txt" for o in outs], [o / "hyp.scores" for o in outs]
            systems += ["--system", f"{arch}=" + ",".join(map(str, hyps)),
                        "--system-scores", f"{arch}=" + ",".join(map(str, scores))]
            inputs += hyps + scores
        specs = [",".join(map(band_spec, bands)) for bands in (self.bands, self.test_bands)]
        command = [tool("band-matrix"), "--ref", reference, "--length-file", self.lengths_file(),
                   "--train-bands", specs[0], "--test-bands", specs[1], *systems,
                   "--tokenize", self.run.profile.tokenize, "--bootstrap", self.bootstrap, "--seed", self.run.seed,
                   "--title", f"Length bands, {self.run.profile.name}, {self.test_set} ({self.side} side, "
                              f"subword tokens)", "--out-dir", OutDir(out)]
        return Step("band-matrix", command, home=out, root=self.run.out, inputs=inputs,
                    display=Display(echo=False, title="the band matrix"))

    def graph(self, data_steps: List[Step]) -> Graph:
        jobs = [Job("prepare", data_steps, kind="prepare")]
        jobs += [Job(f"{arch}-{band_folder(band)}", self.system_steps(arch, band))
                 for arch in self.run.archs for band in self.bands]
        jobs.append(Job("matrix", [self.matrix_step()], kind="report"))
        roots = [self.run.out] + ([self.run.data] if self.run.data_dir else [])
        return Graph(jobs, roots=roots)


def bands_parser() -> Parser:
    parser = Parser("reproduce/bands.sh")
    parser.add_argument("--data", default="synthetic")
    parser.add_argument("--from", dest="source", type=Path)
    parser.add_argument("--download", action="store_true")
    parser.add_argument("--systems", type=name_list, default=["transformer_abs", "transformer_rel"])
    parser.add_argument("--bands", type=band_list)
    parser.add_argument("--test-bands", type=band_list)
    parser.add_argument("--band-side", choices=BAND_SIDES, default="longer")
    parser.add_argument("--test-set")
    add_run_options(parser)
    return parser


def synthetic_steps(bands: Sequence[Bucket], test_bands: Sequence[Bucket], side: str, test_set: str, quick: bool):
    """The synthetic pair in OUT/data: sentences of 3 source words up to what the highest test
    band needs, training and test pairs alike, a data-bin per band (no length limit: the bands
    are the training data) and the test set."""

    def steps(run_: SystemsRun) -> List[Step]:
        words = math.ceil(max(band.hi for band in test_bands) * SOURCE_WORDS_PER_TOKEN) + 1
        sizes = ("3000", "60", "200") if quick else ("20000", "400", "300")
        args = toy_parser().parse_args([
            "--seed", str(run_.seed), "--train-pairs", sizes[0], "--train-words", f"3 {words}",
            "--test-pairs", sizes[1], "--test-words", f"3 {words}", "--dev-pairs", sizes[2], "--threads", "1",
            "--train-band", ",".join(map(band_spec, bands)), "--band-side", side])
        p = dataclasses.replace(toy_preparation(args, run_.data, on_change="redo"), lens=[])
        return preparation_and_test_sets(p, [test_set], run_.threads)

    return steps


def bands_main(argv: Sequence[str]) -> int:
    args = bands_parser().parse_args(argv)
    kind = args.data if args.data in DEFAULT_BANDS else "folder"
    environment = RecipeEnvironment.read()
    smoke = kind == "tatoeba" and environment.smoke
    if kind != "tatoeba" and (args.source or args.download):
        raise StepError("--from and --download are for --data tatoeba")
    if args.bands is None:
        if kind == "folder":
            raise StepError(f"--data {args.data}: give the bands to train on (--bands LO:HI,...), within its lengths")
        train_bands, test_bands = QUICK_BANDS if args.quick and kind == "synthetic" else DEFAULT_BANDS[kind]
        args.bands, args.test_bands = band_list(train_bands), args.test_bands or band_list(test_bands)
    args.test_bands = args.test_bands or args.bands
    # what the demo's and the leaderboard's options say, as this recipe sets them
    args.train_limit = TATOEBA_LIMIT if kind == "tatoeba" else max(band.hi for band in args.bands)
    args.updates = args.updates or (16 if smoke else DEFAULT_UPDATES.get(kind, DEFAULT_UPDATES["tatoeba"]))
    args.oracle_length, args.concat_systems = False, []
    name = {"synthetic": "bands", "tatoeba": "bands-tatoeba"}.get(kind) or f"bands-{Path(args.data).name}"
    args.out_dir = args.out_dir or REPO / "runs" / ("smoke" if smoke else "") / name
    data_dir = absolute(Path(args.data)) if kind == "folder" else None
    if not args.run_job:  # before the Tatoeba export is written into OUT/data
        out = absolute(args.out_dir)
        for path in ([] if data_dir else [out / "data"]) + [out / arch for arch in args.systems] + [out / "matrix"]:
            refuse_unless_ours(path, "reproduce/bands.sh")
    if kind == "synthetic":
        profile = dataclasses.replace(TOY, steps=synthetic_steps(args.bands, args.test_bands, args.band_side,
                                                                args.test_set or "test", args.quick))
    elif kind == "tatoeba":
        profile = tatoeba_profile(args, environment, ["--train-band", ",".join(map(band_spec, args.bands)),
                                              "--band-side", args.band_side])
    else:
        profile = folder_profile(data_dir, steps=lambda run_: [
            step for band in args.bands for step in band_steps(
                preparation_of(Prepared.read(data_dir), run_.threads, band_side=args.band_side), band)])
    if not args.run_job:
        check_archs("--systems", args.systems)
    run_ = systems_run(args, args.systems, profile)
    run_.data_dir = data_dir
    test_set = args.test_set or profile.test_sets[0]
    if test_set not in profile.test_sets and not (run_.data / "testsets" / test_set / "meta.env").is_file():
        raise StepError(f"--test-set {test_set}: no such test set in {run_.data / 'testsets'}")
    bands = Bands(run_, args.bands, args.test_bands, args.band_side, test_set, bootstrap=100 if args.quick else 1000)
    launch = Launch.from_args("bands", argv, args, threads=run_.threads, gpus=run_.gpus, console=ProgressConsole(),
                              environment=RECIPE_ENVIRONMENT)
    began = time.monotonic()
    run(bands.graph(profile.steps(run_)), launch)
    if launch.finishes_here:
        if launch.launcher == "local":
            launch.console.log(f"done in {time.monotonic() - began:.0f} s")
        matrix = run_.out / "matrix"
        print((matrix / "bands.md").read_text(encoding="utf-8"))
        print(f"band matrix: {matrix} (bands.md, bands.json, bands.csv, bands.tex, heatmap.png, heatmap.pdf)")
    return 0
