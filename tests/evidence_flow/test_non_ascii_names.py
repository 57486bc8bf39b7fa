"""Names and words outside ASCII are read like ASCII ones.

General reason: conversations from other languages and datasets name people and places with
accents ("Zoë", "Ñuño", "Québec"). A pattern limited to [A-Za-z] cuts such a word at the accent, so
a faithful copy seems to lose one proper noun and gain another, a speaker label goes unread, and a
golden answer's accented word never matches. Every sentence below is written for this test.
"""

from __future__ import annotations

from toolkits.evidence_flow._facts import clauses, statements


def test_a_speaker_label_with_an_accent_is_read_as_the_speaker():
    names = frozenset({"zoë", "bruno"})
    said = statements("Zoë: I moved the piano to the garage.", names)
    assert said[0].speaker == "zoë"
    assert said[0].opens_turn
    stamped = statements("[09:15] Zoë: the piano is in the garage now.", names)
    assert stamped[0].speaker == "zoë"


def test_an_accented_name_opening_a_clause_starts_a_new_clause():
    parts = clauses("We painted the fence, Émile fixed the gate")
    assert len(parts) == 2
    assert parts[1].strip().startswith("Émile")


def test_accented_proper_nouns_stay_whole():
    # the noun is kept as one word, not cut at the accent into a shorter, different one
    proper = statements("We drove to Québec for the festival.", frozenset())[0].proper
    assert len(proper) == 1
    (noun,) = proper
    assert noun.startswith("québec") or noun.startswith("quebec")


def test_the_conversation_lists_accented_mid_sentence_names():
    from tests.evidence_flow.conftest import ToyGraph
    from toolkits.evidence_flow._graph_view import GraphView

    toy = ToyGraph()
    toy.message("U1:D1:1", "Yesterday my cousin Ñuño and I hiked near Sévérac with friends.")
    assert GraphView.build(toy.export()).proper_names == {"ñuño", "sévérac"}


def test_an_accented_golden_answer_matches_the_sentence_that_words_it():
    from toolkits.evidence_flow._evidence import _words

    assert _words("They settled in Belém.") >= _words("Belém")
    assert "belém" in _words("Belém")


def test_an_accented_name_is_one_name_word_in_a_meaning_sequence():
    # the word-order reading behind the swap checks: a name must stay one word of kind "name",
    # or a swapped accented name would read as a changed common word
    from toolkits.evidence_flow._meaning import _sequence

    words = _sequence("Zoë lent the tent to Émile.", None, frozenset({"zoë", "émile"}))
    names = [word for word, kind in words if kind == "name"]
    assert len(names) == 2
    assert all(not word.isascii() for word in names)
