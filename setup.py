"""fairseq-relpos: position schemes for fairseq Transformers and a length-bucket analysis.

Besides its packages, the distribution installs ``fairseq_relpos_compat.pth`` into
site-packages; it imports ``fairseq_relpos_compat`` at interpreter start-up so that the
stock ``fairseq-*`` commands run on Python >= 3.11, torch >= 2.6 and numpy 2.  Both the
regular and the editable (PEP 660) build are hooked, since setuptools' editable wheels
otherwise drop extra top-level files.
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

HERE = Path(__file__).parent
STARTUP_PTH = "fairseq_relpos_compat.pth"


class BuildPyWithStartupPth(build_py):
    def run(self):
        super().run()
        shutil.copy(HERE / STARTUP_PTH, Path(self.build_lib) / STARTUP_PTH)


class EditableWheelWithStartupPth(editable_wheel):
    def _install_namespaces(self, installation_dir, pth_prefix):
        super()._install_namespaces(installation_dir, pth_prefix)
        shutil.copy(HERE / STARTUP_PTH, Path(installation_dir) / STARTUP_PTH)


setup(
    name="fairseq-relpos",
    version="0.1.0",
    description="Relative and other position schemes for fairseq Transformers, "
    "with length-bucket analysis of machine translation",
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    # what has been tested: docs/plugin.md, "Python versions"
    python_requires=">=3.11,<3.14",
    packages=[
        "fairseq_relpos",
        "fairseq_relpos.positions",
        "fairseq_relpos.modules",
        "fairseq_relpos.models",
        "relpos_analysis",
        "relpos_recipes",
        "relpos_recipes.engine",
        "relpos_recipes.tools",
        "relpos_recipes.graphs",
    ],
    py_modules=["fairseq_relpos_compat"],
    install_requires=[
        "fairseq==0.12.2",
        "torch",
        # relpos_analysis uses sacrebleu's sentence-statistics internals and reproduces its TER
        # search (relpos_analysis/ter.py): versions checked by tests/analysis/test_analysis.py
        "sacrebleu>=2,<2.7",
        "numba",
        "sentencepiece",
        "subword-nmt",
        "sacremoses",
        "matplotlib",
        # relpos_analysis.frames: the report's and the board's records as one long DataFrame
        "pandas",
    ],
    # pytest 9.2 ignores xdist's loadgroup (pytest-xdist#1386): the tests that share a trained
    # model (xdist_group) would each train it on every worker
    extras_require={"test": ["pytest<9.2", "pytest-xdist"]},
    entry_points={"console_scripts": ["relpos-report=relpos_analysis.report:main",
                                      "relpos-leaderboard=relpos_analysis.leaderboard:main",
                                      "relpos-bands=relpos_analysis.bands:main"]},
    cmdclass={"build_py": BuildPyWithStartupPth, "editable_wheel": EditableWheelWithStartupPth},
)
