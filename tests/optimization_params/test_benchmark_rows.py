"""benchmarks/optimization_locomo.py counts every build of a row (the guided rounds' traced runs
too) and summarizes each seeded method, the guided_flat ablation included."""

from __future__ import annotations

from benchmarks.optimization_locomo import RUNNERS, SEEDED, format_table, over_seeds


def _row(micro, builds, traced=0):
    return {"held_out": {"micro": micro, "macro": micro}, "train_micro": 0.5, "evaluations": 10,
            "builds": {"train": builds, "held_out": 1, "traced": traced}, "searched": ["top_k"],
            "params": {"top_k": 10}}


def test_builds_count_the_traced_runs_and_every_seeded_method_is_summarized():
    rows = {"guided@seed0": _row(0.8, 3, traced=2), "guided@seed1": _row(0.6, 5, traced=2),
            "guided_flat@seed0": _row(0.7, 9, traced=2), "unguided@seed0": _row(0.7, 10)}
    summary = over_seeds(rows)
    assert summary["guided"]["builds"]["mean"] == 7.0  # (3 + 1 + 2 + 5 + 1 + 2) / 2
    assert summary["guided"]["held_out_micro"]["mean"] == 0.7 and summary["guided"]["held_out_micro"]["n"] == 2
    assert summary["guided_flat"]["builds"]["mean"] == 12.0 and summary["unguided"]["builds"]["mean"] == 11.0
    assert "guided_flat" in RUNNERS and "guided_flat" in SEEDED
    table = format_table({"guided@seed0": rows["guided@seed0"]}, {"train": [0], "held_out": [1], "budget_tokens": 1000,
                                                                  "seed": 0, "machine": "m"})
    assert table.splitlines()[-1].split()[5] == "6"  # the builds column: 3 train + 1 held-out + 2 traced
