"""Construction, search and evaluation runners (spec §4.5)."""

from membase.runners._common import Failure, RunReport
from membase.runners.construction import ConstructionRunner, ConstructionRunnerConfig
from membase.runners.evaluation import EvaluationRunner, EvaluationRunnerConfig, default_context_builder
from membase.runners.search import SearchRunner, SearchRunnerConfig

__all__ = [
    "ConstructionRunner",
    "ConstructionRunnerConfig",
    "EvaluationRunner",
    "EvaluationRunnerConfig",
    "Failure",
    "RunReport",
    "SearchRunner",
    "SearchRunnerConfig",
    "default_context_builder",
]
