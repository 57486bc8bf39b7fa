"""`--replay-search earliest` candidates: the ops along the lineage of a case's evidence, in execution order."""

from __future__ import annotations

from pathlib import Path

from membase.replay import RunReplayer
from toolkits.replay_verify import candidate_ops


def _failed_records(replayer: RunReplayer) -> list[dict]:
    trajectory = replayer.trajectory_ids()[0]
    graph = replayer.run_dir / "traced_data" / trajectory / "graph_evaluation.json"
    _, qas = replayer._trajectory(trajectory)
    rows = [(qa, replayer.original(trajectory, qa.id) or {}) for qa in qas]
    return [{"query_id": f"query:{qa.id}@1", "graph_path": str(graph)} for qa, row in rows
            if (row.get("metrics") or {}).get("llm_judge", {}).get("value", 1.0) < 0.5]


def test_a_trimmed_evidence_line_makes_its_trim_an_update_candidate(long_context_run: Path) -> None:
    """Long-Context with a small window drops old lines: the op that dropped the evidence is a candidate."""
    with RunReplayer(long_context_run) as replayer:
        order = {op_id: i for i, (op_id, _) in enumerate(replayer.baseline(replayer.trajectory_ids()[0]).ops)}
        found = []
        for record in _failed_records(replayer):
            candidates = candidate_ops(replayer, record)
            positions = [order[op_id] for op_id, _, _ in candidates]
            assert positions == sorted(positions), "candidates are not in execution order"
            stages = [stage for _, _, stage in candidates]
            assert "retrieval" not in stages[:-1], "the question's own retrieval must come last"
            found += [(name, stage) for _, name, stage in candidates]
    assert ("memory_system.memory_update", "update") in found
