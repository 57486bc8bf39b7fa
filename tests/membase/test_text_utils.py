"""The project's one tokenizer, stop-word list and stemmer (membase/utils/text.py), and that every
text comparison uses it."""

from __future__ import annotations

from membase.datasets.gold_points import point_recall
from membase.utils.text import STOP_WORDS, content_words, stem, words
from toolkits.evidence_flow._text import token_sequence
from toolkits.retrieval import ENGLISH_STOPWORDS, unicode_tokenize


def test_words_are_lower_case_runs_of_letters_and_digits_of_any_script():
    assert words("Tomás' snake_case, 3rd try!") == ["tomás", "snake", "case", "3rd", "try"]
    assert words("ＡＢＣ café") == ["abc", "café"]  # NFKC and case folding
    # a CJK run becomes its characters and their pairs; the Latin part of a mixed word stays
    assert words("iphone手机") == ["手", "机", "手机", "iphone"]


def test_stop_words_are_closed_class_words_and_chat_fillers_never_dates_or_numbers():
    assert {"the", "she", "would", "yeah", "thanks"} <= STOP_WORDS
    assert not {"may", "march", "one", "two", "sunday"} & STOP_WORDS


def test_the_stemmer_meets_inflections_irregular_pasts_and_number_words():
    assert stem("agencies") == stem("agency")
    assert stem("planned") == stem("planning") == stem("plan")
    assert stem("bought") == stem("buy") and stem("sold") != stem("bought")
    assert stem("twelve") == "12" and stem("twice") == "2"
    assert stem("called") == "call" and stem("agreed") == "agreed"


def test_content_words_drop_stop_words_and_leading_zeros():
    assert content_words("On 07 May the kids went swimming") == ["7", "may", "kid", "go", "swim"]
    assert content_words("the 07 kids", drop_stop_words=False, stemmed=False) == ["the", "7", "kids"]


def test_retrieval_evidence_flow_and_the_data_checks_share_it():
    text = "Yeah, my sister adopted two rescue kittens on 05 June, thanks!"
    assert unicode_tokenize(text) == token_sequence(text) == content_words(text)
    assert ENGLISH_STOPWORDS is STOP_WORDS
    # RealMem's points speak of "the user": only the other words count
    assert point_recall("User adopted two kittens", "adopting 2 kittens") == 1.0
