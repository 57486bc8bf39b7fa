"""Regression suite: evidence_flow on benchmarks B–F and faultbench, both evidence modes, ONE floor.

The sets were built from the specs by engineers who did not read the attributor (B–F) or by fault
injection (faultbench, ``examples/faultbench``); their misses have since been read, so they are
regression marks, not held-out accuracy. One aggregate floor with a stated tolerance replaces the
per-set floors: a rule that fits one set's sentences earns nothing here, and a change that is
right for a general reason may cost a set a case or two while the whole holds.

Measured (2026-12-03, ``benchmarks/evidence_flow_suite.py``, rules judge, triage on), case-weighted
over 534 cases per mode: retrieved evidence ETA 0.946 / OIA 0.944, annotated evidence 0.934 /
0.927; both modes together ETA 0.940 / OIA 0.935 (1068 attributions).

Set D is now built by the data harness (``benchmarks/attribution``, real membase layers): 49
verified cases instead of the old generator's 85, scored 1.000 / 1.000 in both modes (the old 85
scored 0.988 / 0.988 on the same day; its one miss is among the 36 cases the harness drops,
``docs/benchmarks.md``). With that change the aggregate is 498 cases per mode, 996 attributions:
ETA 934/996 = 0.938, OIA 929/996 = 0.933 — computed from the measurement above with D's
before/after counts swapped in, not from a fresh run of the whole suite. The floor is the lower
of the two.
"""

from __future__ import annotations

import pytest

from benchmarks.evidence_flow_suite import MODES, SETS, aggregate, run_suite

#: The aggregate ETA and OIA over every set in both evidence modes (see the module docstring).
FLOOR = 0.933
#: How far below the floor a change may take the aggregate (about 10 of 996 attributions).
TOLERANCE = 0.01


@pytest.mark.slow
def test_the_aggregate_over_every_set_and_mode_stays_above_one_floor(tmp_path):
    scores = run_suite(SETS, list(MODES), tmp_path)
    whole = aggregate(scores)
    table = "; ".join(f"{s.name}/{s.mode} {s.eta:.3f}/{s.oia:.3f}" for s in scores)
    assert whole.cases >= 950, table
    assert whole.eta >= FLOOR - TOLERANCE and whole.oia >= FLOOR - TOLERANCE, (whole.eta, whole.oia, table)
    # the default mode (retrieved evidence) keeps up with the annotated one (issue 21, item 2)
    retrieved, annotated = aggregate(scores, "retrieved"), aggregate(scores, "annotated")
    assert retrieved.eta >= annotated.eta - 0.02 and retrieved.oia >= annotated.oia - 0.02, table
