"""Metrics (TokenF1, BLEU, LLM judge), judge-response parsing and evaluation prompts."""

from membase.evaluation.judge import judge_template_name, parse_judge_response
from membase.evaluation.metrics import bleu_score, token_f1

__all__ = ["bleu_score", "judge_template_name", "parse_judge_response", "token_f1"]
