"""Regression suite: evidence_flow on benchmarks B–F and faultbench, both evidence modes, ONE floor.

The sets were built from the specs by engineers who did not read the attributor (B–F) or by fault
injection (faultbench, ``examples/faultbench``); their misses have since been read, so they are
regression marks, not held-out accuracy. One aggregate floor with a stated tolerance replaces the
per-set floors: a rule that fits one set's sentences earns nothing here, and a change that is
right for a general reason may cost a set a case or two while the whole holds.

Measured with the generators (2026-12-03, ``benchmarks/evidence_flow_suite.py``, rules judge, triage on), case-weighted
over 534 cases per mode: retrieved evidence ETA 0.946 / OIA 0.944, annotated evidence 0.934 /
0.927; both modes together ETA 0.940 / OIA 0.935 (1068 attributions).

Sets B–F are now data built by the harness (``benchmarks/attribution``: real membase layers,
every case verified by counterfactual replay). Measured one by one (cases, retrieved ETA / OIA,
annotated ETA / OIA): B 88, 0.955 / 0.955, 0.966 / 0.966 (was 92 cases); C 91, 0.978 both (was
105); D 74, 0.919 / 0.905 both (was 85); E 87, 0.966 / 0.954, 0.954 / 0.943 (was 105) — B–E at
``f7fdd1a`` (evidence_flow's rules as of ``b12044a``) — and F 78, 0.885 / 0.872, 0.859 / 0.846 at
``9213f19`` (was 102: 0.912 / 0.902, 0.853 / 0.833 with its generator at the same commit);
``docs/benchmarks.md`` explains each difference. With faultbench as ``docs/evidence_flow.md``
measured it the aggregate is 463 cases per mode, 926 attributions: retrieved 0.948 / 0.942,
annotated 0.944 / 0.937, both modes ETA 876/926 = 0.946, OIA 870/926 = 0.9395 — the previous sum
over 974 attributions (920 / 913 right) with F's generator counts (retrieved 93 / 92 of 102,
annotated 87 / 85) replaced by the harness's (69 / 68 and 67 / 66 of 78); a sum of per-set
measurements, not one fresh run of the whole suite. The floor is the lower of the two, rounded
down.

One fresh run of the whole suite at ``87968c8`` (after D's accented-name fix, 4c4a4b3) measured
926 attributions: ETA 0.959 / OIA 0.955 (B 0.955 / 0.966, C 0.978, D 1.000, E 0.966 / 0.954 and
0.954 / 0.943, F 0.885 / 0.872 and 0.859 / 0.846, faultbench 1.000, retrieved / annotated), in
171 s on 2 cores.

One fresh run at ``953f0db`` (after the paraphrase work: the rules judge on reworded memories, the
seed rules for dated and year answers, the question read without its stored quotes) measured 926
attributions: ETA 0.970 / OIA 0.967 (B 0.955 / 0.966, C 0.989, D 1.000, E 0.966 / 0.954 and
0.954 / 0.943, F 0.949 / 0.949 and 0.897 / 0.885, faultbench 1.000), in 241 s on 2 busy cores.
The floor is that run's lower number, rounded down.
"""

from __future__ import annotations

import pytest

from benchmarks.evidence_flow_suite import MODES, SETS, aggregate, run_suite

#: The aggregate ETA and OIA over every set in both evidence modes (see the module docstring).
FLOOR = 0.965
#: How far below the floor a change may take the aggregate (about 9 of 926 attributions).
TOLERANCE = 0.01


@pytest.mark.slow
@pytest.mark.timeout(2400)  # builds every set through the real layers: minutes, far more on a loaded machine
def test_the_aggregate_over_every_set_and_mode_stays_above_one_floor(tmp_path):
    scores = run_suite(SETS, list(MODES), tmp_path)
    whole = aggregate(scores)
    table = "; ".join(f"{s.name}/{s.mode} {s.eta:.3f}/{s.oia:.3f}" for s in scores)
    # the measured numbers, for whoever moves the floor next (shown with -s or -rP)
    print(f"aggregate over {whole.cases} attributions: ETA {whole.eta:.3f} OIA {whole.oia:.3f}; {table}")
    assert whole.cases >= 900, table
    assert whole.eta >= FLOOR - TOLERANCE and whole.oia >= FLOOR - TOLERANCE, (whole.eta, whole.oia, table)
    # the default mode (retrieved evidence) keeps up with the annotated one (issue 21, item 2)
    retrieved, annotated = aggregate(scores, "retrieved"), aggregate(scores, "annotated")
    assert retrieved.eta >= annotated.eta - 0.02 and retrieved.oia >= annotated.oia - 0.02, table
