"""``faultbench``: a fault-injection benchmark built from real memory-layer runs.

Each memory layer (Long-Context, NaiveRAG, Mem0 on mem0ai 1.0.5, EverMemOS — with their
deterministic fake models and the fake embedder) runs over real LoCoMo conversations through
membase's own construction, search and evaluation runners, traced exactly as they trace any run.
For every case exactly **one** fault acts at one operation, through the layer's own code path
(the fake model's reply, the buffer, the store, a search's results), so the case's
``final_error_type`` and ``final_op_id`` are known by construction (:mod:`._faults`,
:mod:`._labels`) and no graph record names this package.

Faults change what the fact message became: its words dropped, a partial summary, negation, the
fact attached to the other speaker, a swapped date, number or place (:mod:`._corrupt`), a
trimmed buffer, a wrong merge, a deletion, a retrieval that skips the fact or returns a
near-duplicate unit in its place, a stale memory, a final selection that drops it, an answer
that ignores it — at every stage each layer has (:mod:`._catalog`). Every kept case passes
counterfactual replay: with its fault the answer is wrong, with the fault undone it is right.

Output: ``<out>/<split>/<split>-locomo-<n>-<i>.json`` (splits ``long_context``, ``rag``,
``mem0``, ``evermemos``), each a smartcomment export with graph metadata
``memtracebench_graph_filename`` / ``memtracebench_dataset_source`` and one
``data.annotations`` entry per case (``query_id, query, golden_answers, golden_answers_id,
prediction, prediction_id, source_evidence_ids, final_error_type, final_op_id`` + ``fault``),
plus ``<out>/faultbench_manifest.json``. CLI: ``python -m toolkits.faultbench --help``.
"""

from toolkits.faultbench._build import BuildConfig, BuildReport, build_faultbench, cut_trajectory
from toolkits.faultbench._catalog import SPLITS, split_specs
from toolkits.faultbench._corrupt import CORRUPTIONS, Corruptor, degrade
from toolkits.faultbench._faults import ERROR_KINDS, ERROR_TYPE_OF, Fault, FaultSpec
from toolkits.faultbench._models import ExtractiveReader, judge_answer, reader_model, token_judge_model
from toolkits.faultbench._pipeline import FaultInjector, PipelineRun, QARecord, run_pipeline
from toolkits.faultbench._score import score_evidence_flow
from toolkits.faultbench._targets import Target, find_targets

__all__ = [
    "CORRUPTIONS",
    "ERROR_KINDS",
    "ERROR_TYPE_OF",
    "SPLITS",
    "BuildConfig",
    "BuildReport",
    "Corruptor",
    "ExtractiveReader",
    "Fault",
    "FaultInjector",
    "FaultSpec",
    "PipelineRun",
    "QARecord",
    "Target",
    "build_faultbench",
    "cut_trajectory",
    "degrade",
    "find_targets",
    "judge_answer",
    "reader_model",
    "run_pipeline",
    "score_evidence_flow",
    "split_specs",
    "token_judge_model",
]
