"""Build the benchmark folder: <out>/<split>/case_NNN.json plus a manifest (fault kinds) beside it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import CASES  # noqa: E402
from conversations import CONVERSATIONS  # noqa: E402
from recorder import LAYERS  # noqa: E402


def build(out: Path) -> list[dict]:
    manifest = []
    for i, (conv_id, split, fault, qkey, prediction) in enumerate(CASES, start=1):
        conv = CONVERSATIONS[conv_id]
        q = conv.questions[qkey]
        fault = {**fault, "question": q}
        rec = LAYERS[split](conv, fault)
        data = rec.run(q.id, prediction)
        if rec.label is None:
            raise RuntimeError(f"case {i}: the fault never reached question {q.id}")
        name = f"case_{i:03d}.json"
        data["metadata"].update({"memtracebench_graph_filename": name,
                                 "memtracebench_dataset_source": "HandWritten"})
        (out / split).mkdir(parents=True, exist_ok=True)
        tmp = out / split / (name + ".tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1))
        tmp.replace(out / split / name)
        ann = data["data"]["annotations"][0]
        manifest.append({"file": f"{split}/{name}", "conversation": conv_id, "split": split,
                         "kind": fault["kind"], "query_id": ann["query_id"],
                         "final_error_type": ann["final_error_type"], "final_op_id": ann["final_op_id"],
                         "context_holds_answer": rec.context_holds})
    (out.parent / (out.name + "_manifest.json")).write_text(json.dumps(manifest, indent=1))
    return manifest
