"""``faultbench``: a fault-injection benchmark built from real memory-layer runs.

Each memory layer (Long-Context, NaiveRAG, Mem0, EverMemOS — with their deterministic fake
models and ``FakeEmbedder``) runs over real LoCoMo conversations (cut to their first
``max_messages`` messages), traced with smartcomment exactly like the membase runners trace it.
For every case exactly **one** fault is injected at a chosen operation, so the case's
``final_error_type`` and ``final_op_id`` are known by construction.

Fault model (details in :mod:`toolkits.faultbench._faults`):

* A case targets a question whose golden answer is stated by exactly one message of the
  conversation (the *fact message*), which is one of its evidence messages, and that the
  clean run answers correctly.
* ``extraction`` (ExtractionError): the op that turns the fact message into memory writes it
  without the answer's words. ``update`` (UpdateError): a later update op degrades every unit
  holding the fact. ``deletion`` (DeletionError): a later op explicitly deletes every unit
  holding it. ``retrieval`` (RetrievalError): the question's retrieval skips the units that
  hold it. ``response`` (ResponseError): the answer model skips the context statements that
  state it. Update/deletion points are drawn by the seeded RNG among later messages.
* Only cases whose answer then actually fails (the deterministic judge says WRONG) and whose
  faulty op is found in the graph are kept; drop reasons are counted in the report.
* To keep graphs few and small, one run may carry several cases — at most one per fault kind,
  on questions with different fact messages. Such a group is kept only if every case is
  valid on its own: with all the group's faults its answer fails, and without its own fault
  (the others kept) its answer is correct, so each case's fault is decisive and untouched by
  the others. (Long-Context deletions forget everything and always run alone.)
* Seeded and reproducible: the RNG picks conversations, targets and fault points, and
  ``uuid.uuid4`` is seeded during each run, so graph/op/edge/document ids repeat; only
  ``created_at`` timestamps (and source line numbers, if the code moved) differ between builds.

Output: ``<out>/<split>/<split>-locomo-<n>-<i>.json`` (splits ``long_context``, ``rag``,
``mem0``, ``evermemos``; ``n`` = LoCoMo sample), each a smartcomment export with graph
metadata ``memtracebench_graph_filename`` / ``memtracebench_dataset_source`` and one
``data.annotations`` entry per case (``query_id, query, golden_answers, golden_answers_id,
prediction, prediction_id, source_evidence_ids, final_error_type, final_op_id`` + ``fault``),
plus ``<out>/faultbench_manifest.json``. Recorded source paths are made repository-relative.
CLI: ``python -m toolkits.faultbench --help``.
"""

from toolkits.faultbench._build import SPLITS, BuildConfig, BuildReport, build_faultbench, candidate_targets
from toolkits.faultbench._faults import ERROR_TYPE_OF, FAULT_KINDS, Fault, FaultTarget, degrade
from toolkits.faultbench._models import ExtractiveReader, judge_answer
from toolkits.faultbench._pipeline import FaultInjector, PipelineRun, QARecord, run_pipeline
from toolkits.faultbench._score import score_evidence_flow

__all__ = [
    "ERROR_TYPE_OF",
    "FAULT_KINDS",
    "SPLITS",
    "BuildConfig",
    "BuildReport",
    "ExtractiveReader",
    "Fault",
    "FaultInjector",
    "FaultTarget",
    "PipelineRun",
    "QARecord",
    "build_faultbench",
    "candidate_targets",
    "degrade",
    "judge_answer",
    "run_pipeline",
    "score_evidence_flow",
]
