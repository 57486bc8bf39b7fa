"""How presence is measured."""

from __future__ import annotations

from toolkits.evidence_flow._text import Probe, content_tokens, decode_value, memory_text, message_text


def test_tokens_drop_stop_words_keep_dates_and_numbers():
    assert content_tokens("On 07 May, 2023 the kids went!") == {"7", "may", "2023", "kid", "went"}


def test_light_stemming_and_number_words_meet_on_both_sides():
    assert content_tokens("four years") == content_tokens("4 year")
    assert content_tokens("painted") == content_tokens("painting") == content_tokens("paints")
    assert content_tokens("researching adoption agencies") >= content_tokens("research adoption agency")
    assert content_tokens("Paris bus") == {"paris", "bus"}


def _answer_probe(answer: str) -> Probe:
    return Probe(answer_tokens=content_tokens(answer), evidence_token_sets=(), mode="answer")


def test_changed_day_is_a_loss_but_a_dropped_article_is_not():
    probe = _answer_probe("7 May 2023")
    assert probe.present("Caroline went on 7 May 2023")
    assert not probe.present("Caroline went on 8 May 2023")
    assert _answer_probe("a safe place for kids").present("she wants a safe place for the kids")


def test_values_are_decoded_and_unit_bookkeeping_is_ignored():
    assert decode_value("'hello'") == "hello"
    raw = '{"id": "Sweden-1", "memory": "likes tea", "original_data": "Sweden"}'
    assert "Sweden" not in memory_text(raw)
    assert "Sweden" in memory_text(raw, unit=False)
    suffixed = '{"content": "From Sweden\\nBelow is this message\'s metadata:\\nSpeaker Name: X"}'
    assert message_text(suffixed) == "From Sweden"


class _Embedder:
    def embed(self, texts):
        return [[1.0, 0.0] if "nordic" in t.lower() or "sweden" in t.lower() else [0.0, 1.0] for t in texts]


def test_optional_embedding_similarity_counts_as_presence():
    probe = Probe(answer_tokens=content_tokens("Sweden"), evidence_token_sets=(), mode="answer",
                  embedder=_Embedder(), probe_text="Sweden")
    assert probe.present("a Nordic country")
    assert not probe.present("a sunny island")


def test_presence_is_measured_per_line_not_over_scattered_words():
    probe = _answer_probe("adoption agencies")
    assert probe.present("Caroline researched adoption agencies.")
    assert not probe.present("We talked about adoption.\nThe travel agencies were closed.")
