"""Lexical metrics: SQuAD token F1 and sentence BLEU (nltk, 13a tokenisation)."""

from __future__ import annotations

import re
import string
from collections import Counter

__all__ = ["bleu_score", "normalize_answer", "tokenize_13a", "token_f1"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lowercase, drop punctuation and articles, collapse whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _f1(prediction: str, reference: str) -> float:
    pred, ref = normalize_answer(prediction).split(), normalize_answer(reference).split()
    if not pred and not ref:
        return 1.0
    if not pred or not ref:
        return 0.0
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, references: list[str]) -> float:
    """Token-multiset F1, the maximum over references."""
    return max((_f1(prediction, r) for r in references), default=0.0)


_13A_RULES = [
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
]


def tokenize_13a(text: str) -> list[str]:
    """The mteval-v13a tokenisation (punctuation split off, except inside numbers)."""
    text = text.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    for entity, char in (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">")):
        text = text.replace(entity, char)
    text = f" {text} "
    for pattern, repl in _13A_RULES:
        text = pattern.sub(repl, text)
    return text.split()


def bleu_score(prediction: str, references: list[str], *, n_gram: int = 1, smooth: bool = True,
               lowercase: bool = False) -> float:
    """Sentence BLEU over all references (uniform weights up to `n_gram`); 0.0 on any error."""
    try:
        from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

        if lowercase:
            prediction, references = prediction.lower(), [r.lower() for r in references]
        hyp = tokenize_13a(prediction)
        refs = [tokenize_13a(r) for r in references]
        if not hyp or not any(refs):
            return 0.0
        weights = tuple([1.0 / n_gram] * n_gram)
        smoothing = SmoothingFunction().method1 if smooth else None
        return float(sentence_bleu(refs, hyp, weights=weights, smoothing_function=smoothing))
    except Exception:  # a metric must never sink an evaluation run
        return 0.0
