"""One harness for the attribution benchmarks: each benchmark is data, its graphs come from the real layers.

A benchmark is a JSON file in ``data/`` (:mod:`.data`): hand-written conversations and a fault
plan. :mod:`.build` runs each case through membase's real layers with faultbench's faults
driven by the plan's texts (:mod:`.faults`) and keeps the cases that counterfactual replay
verifies; :mod:`.score` scores attribution outputs and lists the misses. The CLI is
``python -m benchmarks.attribution`` (``--help``).
"""

from benchmarks.attribution.build import MANIFEST, BuildReport, build_benchmark
from benchmarks.attribution.data import Benchmark, BenchmarkError, load_benchmark
from benchmarks.attribution.score import attribute, score_outputs

__all__ = ["MANIFEST", "Benchmark", "BenchmarkError", "BuildReport", "attribute", "build_benchmark",
           "load_benchmark", "score_outputs"]
