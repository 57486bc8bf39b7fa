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

Public API: the names in ``__all__`` below. Code outside this package (the shared benchmark
harness ``benchmarks.attribution``, other benchmarks, tests of other packages) imports only
these; the ``_private`` modules may change without notice (``tests/test_layering.py`` checks).
The harness reuses the build's pieces: ``run_pipeline``/``PipelineRun`` run a layer with a
``FaultSet`` of faults (``fault_class`` per split, ``LongContextFault``/``Mem0Fault`` to
subclass, ``patch_attr`` to swap a method while a fault acts), ``label_op`` names the faulty op,
``case_nodes``/``relativize_paths``/``seeded_uuid4`` shape and fix the export, and
``message_sentences``/``Target``/``NO_ANSWER`` are the texts' units.
"""

from toolkits.faultbench._build import (
    BuildConfig,
    BuildReport,
    build_faultbench,
    case_nodes,
    cut_trajectory,
    relativize_paths,
    seeded_uuid4,
)
from toolkits.faultbench._catalog import SPLITS, fault_class, split_specs
from toolkits.faultbench._corrupt import CORRUPTIONS, Corruptor, degrade
from toolkits.faultbench._faults import ERROR_KINDS, ERROR_TYPE_OF, Fault, FaultSet, FaultSpec, patch_attr
from toolkits.faultbench._labels import label_op
from toolkits.faultbench._layer_faults import LongContextFault
from toolkits.faultbench._mem0_faults import Mem0Fault
from toolkits.faultbench._models import (
    NO_ANSWER,
    ExtractiveReader,
    judge_answer,
    reader_model,
    token_judge_model,
)
from toolkits.faultbench._pipeline import FaultInjector, PipelineRun, QARecord, run_pipeline
from toolkits.faultbench._replay_check import check_labels_by_replay
from toolkits.faultbench._score import score_evidence_flow
from toolkits.faultbench._targets import Target, find_targets, message_sentences

__all__ = [
    "CORRUPTIONS",
    "ERROR_KINDS",
    "ERROR_TYPE_OF",
    "NO_ANSWER",
    "SPLITS",
    "BuildConfig",
    "BuildReport",
    "Corruptor",
    "ExtractiveReader",
    "Fault",
    "FaultInjector",
    "FaultSet",
    "FaultSpec",
    "LongContextFault",
    "Mem0Fault",
    "PipelineRun",
    "QARecord",
    "Target",
    "build_faultbench",
    "case_nodes",
    "check_labels_by_replay",
    "cut_trajectory",
    "degrade",
    "fault_class",
    "find_targets",
    "judge_answer",
    "label_op",
    "message_sentences",
    "patch_attr",
    "reader_model",
    "relativize_paths",
    "run_pipeline",
    "score_evidence_flow",
    "seeded_uuid4",
    "split_specs",
    "token_judge_model",
]
