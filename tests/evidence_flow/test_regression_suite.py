"""Regression suite: evidence_flow on benchmarks B–F and faultbench, both evidence modes, ONE floor.

The sets were built from the specs by engineers who did not read the attributor (B–F) or by fault
injection (faultbench, ``examples/faultbench``); their misses have since been read, so they are
regression marks, not held-out accuracy. One aggregate floor with a stated tolerance replaces the
per-set floors: a rule that fits one set's sentences earns nothing here, and a change that is
right for a general reason may cost a set a case or two while the whole holds.

Measured (2026-12-03, ``benchmarks/evidence_flow_suite.py``, rules judge, triage on), case-weighted
over 534 cases per mode: retrieved evidence ETA 0.946 / OIA 0.944, annotated evidence 0.934 /
0.927; both modes together ETA 0.940 / OIA 0.935 (1068 attributions).

Sets B and D are now built by the data harness (``benchmarks/attribution``, real membase layers):
B 61 verified cases instead of 92 (old: 0.935 retrieved / 0.946 annotated), D 50 instead of 85
(old: 0.988 / 0.988), both scored 1.000 / 1.000 in both modes on 2026-12-03; the old misses are
explained in ``docs/benchmarks.md``. The aggregate is then 468 cases per mode, 936 attributions:
ETA 885/936 = 0.946, OIA 880/936 = 0.940 (retrieved 0.953 / 0.951, annotated 0.938 / 0.929) —
computed from the measurement above with B's and D's before/after counts swapped in, not from a
fresh run of the whole suite. The floor is the lower of the two.
"""

from __future__ import annotations

import pytest

from benchmarks.evidence_flow_suite import MODES, SETS, aggregate, run_suite

#: The aggregate ETA and OIA over every set in both evidence modes (see the module docstring).
FLOOR = 0.940
#: How far below the floor a change may take the aggregate (about 9 of 936 attributions).
TOLERANCE = 0.01


@pytest.mark.slow
def test_the_aggregate_over_every_set_and_mode_stays_above_one_floor(tmp_path):
    scores = run_suite(SETS, list(MODES), tmp_path)
    whole = aggregate(scores)
    table = "; ".join(f"{s.name}/{s.mode} {s.eta:.3f}/{s.oia:.3f}" for s in scores)
    assert whole.cases >= 900, table
    assert whole.eta >= FLOOR - TOLERANCE and whole.oia >= FLOOR - TOLERANCE, (whole.eta, whole.oia, table)
    # the default mode (retrieved evidence) keeps up with the annotated one (issue 21, item 2)
    retrieved, annotated = aggregate(scores, "retrieved"), aggregate(scores, "annotated")
    assert retrieved.eta >= annotated.eta - 0.02 and retrieved.oia >= annotated.oia - 0.02, table
