"""Counterfactual replay of membase runs: run again, and with one op repaired (see ``engine``)."""

from membase.replay.engine import Baseline, ReplayOutcome, RunReplayer
from membase.replay.manifest import (
    MANIFEST_FILE,
    ReplayDataMissing,
    RunManifest,
    read_manifest,
    write_manifest,
)
from membase.replay.repairs import REPAIR_STAGES, Evidence, Repair, RepairUnsupported, make_repair

__all__ = [
    "MANIFEST_FILE",
    "REPAIR_STAGES",
    "Baseline",
    "Evidence",
    "Repair",
    "RepairUnsupported",
    "ReplayDataMissing",
    "ReplayOutcome",
    "RunManifest",
    "RunReplayer",
    "make_repair",
    "read_manifest",
    "write_manifest",
]
