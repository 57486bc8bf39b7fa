"""Step 1 — which messages hold the critical information (the *seeds* of the flow).

Only the inputs every strategy is given are read: the question, the golden answer, the graph,
and the starting evidence the caller hands over. Gold labels (``final_error_type``,
``final_op_id``, the annotation's fault record) are never read.

* **Annotated evidence** (``evidence_is_pseudo=False``): the given messages are the evidence;
  those that state the golden answer are the seeds (*answer mode*); when none does (inferred
  answers such as a date computed from "yesterday"), the given messages are the seeds
  (*evidence mode*).
* **Retrieved (pseudo) evidence**: retrieved messages may be wrong, and retrieval by question
  and answer can miss the one message that states this answer about this question among several
  that share the answer's words. So every message of the conversation that states the golden
  answer competes (searching the conversation for the golden answer is what retrieval itself
  does), ranked by how well it matches the question, the retrieved ones with a small head start;
  the best is the seed. When no message states the answer, the retrieved message closest to the
  question is the seed (evidence mode, low confidence). The evidence
  recorded on the query node is never used: it is gold information. When retrieval found
  nothing, the result says so.
* No evidence given and no fallback allowed: as for retrieved evidence without hits.

Messages that restate the seed's fact (the golden answer *and* most of the seed statement's
distinctive words) are seeds too, so that a fact told twice is followed from both tellings;
messages that merely share the answer word are not.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

from ._dates import message_date, relative_points, resolves_relative_time, text_dates
from ._facts import Statement, merge_statements, speaks_in_first_person, statements, without_address
from ._graph_view import GraphView, NodeRec, is_message, message_speaker
from ._probe import asked_kinds
from ._text import content_tokens, message_text, stem, token_recall

__all__ = ["EvidenceChoice", "answer_statements", "choose_evidence"]

_RESTATEMENT_SUPPORT = 0.6
_CLOSE_SECOND = 0.9
_RETRIEVED_BONUS = 0.05
_OWN_WORDS_BONUS = 0.02
_PHRASE_WEIGHT = 0.1
_ASKED_WEIGHT = 0.9
#: How much of a question's words that a reply was asked count for the reply (less than its own words).
_REPLIED_WEIGHT = 0.5
#: Question match a searched message needs to seed the flow when nothing was given (else no evidence).
_MIN_SEARCHED_SCORE = 0.4


@dataclass(kw_only=True)
class EvidenceChoice:
    """The seeds of one case and how sure the choice is."""

    mode: str
    """``answer`` or ``evidence`` (``none`` when no seed was found)."""
    seeds: list[NodeRec]
    facts: list[Statement]
    source: str
    """``annotated``, ``retrieved``, ``conversation`` (messages found by the golden answer) or ``none``."""
    confidence: float
    answer_spread: int
    """How many messages before the question state the golden answer."""
    notes: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    """Given evidence ids that are not in the graph."""
    rivals: list[Statement] = field(default_factory=list)
    """Answer mode: statements of the other messages that hold the golden answer (not restatements)."""
    uncertain: str = ""
    """Why the seed may be the wrong message (empty when the choice is sure): several messages state
    the answer and match the question almost equally, or none states it and the seed is only the
    message closest to the question."""


def node_statements(view: GraphView, node: NodeRec) -> list[Statement]:
    """The statements of a message (its speaker is the context for sentences that name nobody)."""
    key = ("statements", node.full_node_id)
    if key not in view.memo:
        view.memo[key] = statements(message_text(node.value), view.speakers, message_speaker(node))
    return view.memo[key]


def answer_statements(view: GraphView, node: NodeRec, answer: frozenset[str], threshold: float) -> list[Statement]:
    """Statements of ``node`` that hold the golden answer: single sentences, else the shortest runs
    of adjacent sentences that do (an answer told over several sentences)."""
    if not answer:
        return []
    speaker = message_speaker(node)
    who = stem(speaker) if speaker else None
    if who and who in answer and answer <= view.speakers:
        # "Who sorts donations?" - "Elena": her own "I sort donations" states it
        own = [dataclasses.replace(s, tokens=s.tokens | {who}) for s in node_statements(view, node)
               if speaks_in_first_person(s.text)]
        if own:
            return own
    tokens = view.message_tokens.get(node.full_node_id)
    if tokens is not None and token_recall(answer, tokens) < threshold:
        return []  # the whole message does not hold it, so no part of it does
    found = node_statements(view, node)
    for size in range(1, len(found) + 1):
        runs = [merge_statements(found[i:i + size]) for i in range(len(found) - size + 1)]
        hits = [run for run in runs if token_recall(answer, run.tokens) >= threshold]
        if hits:
            return hits
    return []


def rarity_weights(view: GraphView, tokens: frozenset[str]) -> dict[str, float]:
    """Each token's weight by how few of the conversation's messages use it (inverse document
    frequency; a token no message uses weighs the most)."""
    n = max(len(view.messages), 1)
    return {t: math.log((n + 1) / (view.document_frequency.get(t, 0) + 0.5)) for t in sorted(tokens)}


def _question_score(view: GraphView, node: NodeRec, question: frozenset[str]) -> float:
    """How well a message matches the question: rarity-weighted share of question tokens it holds."""
    if not question:
        return 0.0
    weight = rarity_weights(view, question)
    total = math.fsum(weight.values())
    speaker = message_speaker(node)
    own = {stem(speaker)} if speaker else set()

    def share(text: str) -> float:
        # the name of the one it is said to is not what it is about ("Jonas, I have news: ...")
        tokens = content_tokens(without_address(text, view.speakers)) | own
        return math.fsum(weight[t] for t in sorted(question & tokens)) / total if total > 0 else 0.0

    said = node_statements(view, node)
    whole = share(message_text(node.value))
    # a sentence that asks ("Are you buying a car now?") is weaker evidence than one that tells
    # with the same words, yet it still points at its reply (see _reply_if_asked)
    if any(_asks(s.text) for s in said):
        score = max(share(" ".join(s.text for s in said if not _asks(s.text))), _ASKED_WEIGHT * whole)
    else:
        score = whole
    # a question about someone is best answered by what that person said
    return score + (_OWN_WORDS_BONUS if speaker and stem(speaker) in question else 0.0)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[^\W_]+", text.lower()))


def _phrase_match(view: GraphView, node: NodeRec, golden: str, answer: frozenset[str], threshold: float) -> float:
    """How closely a sentence of the message words the golden answer (all words, stop words too)."""
    wanted = _words(golden)
    if not wanted:
        return 0.0
    return max((len(wanted & _words(s.text)) / len(wanted | _words(s.text))
                for s in answer_statements(view, node, answer, threshold)), default=0.0)


def _position(view: GraphView, node: NodeRec) -> int:
    if "message_position" not in view.memo:
        view.memo["message_position"] = {m.full_node_id: i for i, m in enumerate(view.messages)}
    return view.memo["message_position"][node.full_node_id]


def _replied_score(view: GraphView, node: NodeRec, question: frozenset[str]) -> float:
    """The share of the question, beyond the message's own words, that the question it replies to
    asks, times how much of what that asks the question asks too: "Nope, we will bake rye bread at
    home" replies to "Skipping the pottery class?" and so answers "What will Wanda do instead of the
    pottery class?" (a reply is about what it was asked, as a message that only asks hands over to
    its reply)."""
    at = _position(view, node)
    if not question or at == 0:
        return 0.0
    asked = view.messages[at - 1]
    if message_speaker(asked) == message_speaker(node):
        return 0.0
    asking = [part for s in node_statements(view, asked) for part in (s.parts or [s]) if _asks(part.text)]
    asks = frozenset().union(*(p.tokens for p in asking)) - view.speakers
    if not asks:
        return 0.0
    own = content_tokens(without_address(message_text(node.value), view.speakers))
    weight = rarity_weights(view, question | asks)
    total = math.fsum(weight[t] for t in sorted(question))
    # it was asked the same question only as far as what it asks is what the question asks ("How
    # many tomatoes did you harvest?" is another question than "How many tomatoes did she plant?")
    same = math.fsum(weight[t] for t in sorted(asks & question)) / math.fsum(weight[t] for t in sorted(asks))
    gained = math.fsum(weight[t] for t in sorted(asks & question - own))
    return same * gained / total if total > 0 else 0.0


def _rank(view: GraphView, nodes: Sequence[NodeRec], question: frozenset[str], retrieved: Sequence[str] = (),
          phrase: dict[str, float] | None = None) -> list[tuple[float, NodeRec]]:
    """Best match to the question first (what a reply was asked counts at :data:`_REPLIED_WEIGHT`);
    retrieved messages get a small head start, a message that words the answer the way the golden
    answer does a smaller one; remaining ties go to the better retrieval rank, then to conversation
    order."""
    rank = {node_id: i for i, node_id in enumerate(retrieved)}
    phrase = phrase or {}
    scored = [(_question_score(view, n, question) + _REPLIED_WEIGHT * _replied_score(view, n, question)
               + (_RETRIEVED_BONUS if n.full_node_id in rank else 0.0)
               + _PHRASE_WEIGHT * phrase.get(n.full_node_id, 0.0), n) for n in nodes]
    return sorted(scored, key=lambda item: (-item[0], rank.get(item[1].full_node_id, len(rank))))


def choose_evidence(
    view: GraphView,
    *,
    query: NodeRec,
    question: str,
    answer: frozenset[str],
    evidence_ids: Sequence[str] | None,
    pseudo: bool,
    answer_threshold: float,
    golden: str = "",
) -> EvidenceChoice:
    """Pick the seeds of the flow (see the module docstring)."""
    before = [m for m in view.messages if m.created_at <= query.created_at] or list(view.messages)
    question_tokens = content_tokens(question)
    kinds = asked_kinds(question)
    stating_all = [m for m in before if answer_statements(view, m, answer, answer_threshold)]
    spread = len(stating_all)
    given, unresolved = resolve_given(view, evidence_ids or [])
    notes: list[str] = []

    if evidence_ids is not None and not pseudo and given:
        stating = [m for m in given if answer_statements(view, m, answer, answer_threshold)]
        if stating:
            return _answer_choice(view, stating, question_tokens, "annotated", 1.0, spread, answer, answer_threshold, notes,
                                  unresolved, restate_from=stating_all)
        facts = [s for m in given for s in node_statements(view, m)]
        return EvidenceChoice(mode="evidence", seeds=given, facts=_closest(facts, question_tokens, kinds), source="annotated",
                              confidence=0.75, answer_spread=spread, notes=["no evidence message states the golden "
                              "answer: following the evidence's own content"], unresolved=unresolved)

    if pseudo and not given:
        notes.append("retrieval found no starting evidence")
    if stating_all:
        # Every message that states the golden answer competes, the retrieved ones with a small
        # head start: retrieval ranks by question and answer together, and can miss the one
        # message that states this answer about this question among several that share its words.
        retrieved = [m.full_node_id for m in given]
        stating_given = [m for m in stating_all if m.full_node_id in retrieved]
        if given and not stating_given:
            notes.append("the retrieved evidence does not state the golden answer; the conversation's "
                         "messages that do were searched")
        phrase = {m.full_node_id: _phrase_match(view, m, golden, answer, answer_threshold) for m in stating_all}
        ranked = _rank(view, stating_all, question_tokens, retrieved, phrase)
        best = ranked[0][1]
        source = "retrieved" if best.full_node_id in retrieved else "conversation"
        clear = len(ranked) == 1 or ranked[1][0] < _CLOSE_SECOND * ranked[0][0]
        confidence = (0.9 if clear else 0.7) if source == "retrieved" else (0.8 if clear else 0.6)
        choice = _answer_choice(view, [best], question_tokens, source, confidence, spread, answer, answer_threshold,
                                notes, unresolved, restate_from=stating_all)
        if not clear and ranked[1][1] not in choice.seeds:
            choice.uncertain = (f"{ranked[1][1].full_node_id} also states the golden answer and matches the question "
                                "almost as well")
        return choice
    dated = _dated_seed(view, before, question, golden, question_tokens, [m.full_node_id for m in given])
    if dated is not None:
        score, seed = dated
        notes.append(f"no message states the golden answer: {seed.full_node_id}, whose time points to the golden "
                     "date, is followed")
        return EvidenceChoice(mode="evidence", seeds=[seed], facts=_closest(node_statements(view, seed),
                              question_tokens, kinds), source="retrieved" if seed in given else "conversation",
                              confidence=round(0.5 + 0.3 * min(score, 1.0), 3), answer_spread=spread, notes=notes,
                              unresolved=unresolved, uncertain="no message states the golden answer; the seed's "
                              "relative time points to the golden date")
    if given:
        ranked = _rank(view, given, question_tokens, [m.full_node_id for m in given])
        score, seed = _telling(view, ranked, query, notes, question_tokens)
        facts = node_statements(view, seed)
        notes.append("no message states the golden answer: following the retrieved message closest to the question")
        # a retrieved message that shares little with the question is a weak seed
        return EvidenceChoice(mode="evidence", seeds=[seed], facts=_closest(facts, question_tokens, kinds),
                              source="retrieved", confidence=round(0.3 + 0.6 * min(score, 1.0), 3),
                              answer_spread=spread, notes=notes, unresolved=unresolved,
                              uncertain="no message states the golden answer; the seed only matches the question")
    if before:
        # nothing given and no message states the answer (an inferred answer): the message of the
        # conversation closest to the question, with less confidence than a retrieved one
        # by what the question asks about, not by whom: a name alone matches everything its person said
        about = frozenset(question_tokens - view.speakers)
        score, seed = _rank(view, before, about)[0] if about else (0.0, None)
        if seed is not None and score >= _MIN_SEARCHED_SCORE:
            seed = _reply_if_asked(view, seed, query, notes, about)
            notes.append("no message states the golden answer: following the conversation's message closest to "
                         "the question")
            return EvidenceChoice(mode="evidence", seeds=[seed], facts=_closest(node_statements(view, seed),
                                  question_tokens, kinds), source="conversation",
                                  confidence=round(0.2 + 0.5 * min(score, 1.0), 3), answer_spread=spread, notes=notes,
                                  unresolved=unresolved, uncertain="no message states the golden answer and none "
                                  "was given; the seed only matches the question")
    return EvidenceChoice(mode="none", seeds=[], facts=[], source="none", confidence=0.0, answer_spread=spread,
                          notes=notes, unresolved=unresolved)


#: How many of the messages that match a when-question best are read for their dates (reading a
#: message's times is slow; one that matches the question this poorly is no seed anyway).
_DATED_CANDIDATES = 8


def _dated_seed(view: GraphView, before: Sequence[NodeRec], question: str, golden: str, question_tokens: frozenset[str],
                retrieved: Sequence[str]) -> tuple[float, NodeRec] | None:
    """A when-question whose golden date no message states in full: the message about what the
    question asks that points to that date is where the date comes from — its own relative time
    ("yesterday", "last Friday") read from the day it was sent, or a date it names without the year
    ("on 29 June", said in May 2024); a golden year alone ("in 2022") is pointed to by a time counted
    in years ("a year ago", said in 2023). None when the question asks no time, the answer holds no date,
    or no such message matches what the question asks about."""
    if "weekday" not in asked_kinds(question):  # the kinds a when-question asks for
        return None
    about = frozenset(question_tokens - view.speakers)
    first_day = next((day for day in (_sent_on(view, m) for m in before) if day is not None), None)
    targets = set(text_dates(golden, first_day)) if about and first_day is not None else set()
    years = _golden_years(golden) if about and not targets else frozenset()
    if not targets and not years:
        return None
    # a message of the conversation must match the question as well as a searched seed must; one that
    # retrieval returned only has to share a word with it
    near = [m for m in before
            if _question_score(view, m, about) >= (1e-9 if m.full_node_id in retrieved else _MIN_SEARCHED_SCORE)]
    for score, candidate in _rank(view, near, about, retrieved)[:_DATED_CANDIDATES]:
        day = _sent_on(view, candidate)
        if day is None:
            continue
        text = message_text(candidate.value)
        if _points_to_year(text, years, day) if years else _points_to(text, golden, targets, day):
            return score, candidate
    return None


_YEAR = re.compile(r"\b(?:1[89]|20)\d{2}\b")


def _golden_years(golden: str) -> frozenset[int]:
    """The years a golden answer that names a year and no day names ("in 2022")."""
    return frozenset(int(y) for y in _YEAR.findall(golden))


def _points_to_year(text: str, years: frozenset[int], said_on: date) -> bool:
    """``text``, said on ``said_on``, points into a golden year with a relative time: one counted in
    years ("a year ago", "last year"), or any one when it was said in another year (a "yesterday"
    said in the golden year points into it without telling anything about the year)."""
    return any(point.year in years and (grain == "year" or said_on.year not in years)
               for point, grain in relative_points(text, said_on))


#: A golden date told as a span before or after a day ("the week before 9 June 2023", "a few days
#: before 24 May"): that day is when it was said, the span what the message said ("last week").
_ANCHORED = re.compile(r"\b(before|after)\b", re.IGNORECASE)
#: How many days from its anchor a golden span may reach ("the month before").
_ANCHOR_REACH = 31


def _points_to(text: str, golden: str, targets: set[date], said_on: date) -> bool:
    """``text``, said on ``said_on``, names one of the golden dates or points to one with a relative
    time (a number beside it, "yesterday, 6 students", is cut off by ``relative_points``).

    A golden date anchored to a day ("a few days before 24 May") is the relative time of a message
    sent on that day which points to the side the golden answer names: "a few days ago" said on
    24 May, not "now" or a date that merely names 24 May.
    """
    side = _ANCHORED.search(golden)
    if side is None:
        return bool(targets & set(text_dates(text, said_on))) or resolves_relative_time(text, golden, said_on)
    if said_on not in targets:
        return False
    step = -1 if side.group(1).lower() == "before" else 1
    return any(resolves_relative_time(text, (said_on + timedelta(days=step * k)).isoformat(), said_on)
               for k in range(1, _ANCHOR_REACH + 1))


def _sent_on(view: GraphView, node: NodeRec) -> date | None:
    """The day a message was sent (memoised per graph: parsing a written-out time is slow)."""
    key = ("sent_on", node.full_node_id)
    if key not in view.memo:
        view.memo[key] = message_date(node.value)
    return view.memo[key]


def _telling(view: GraphView, ranked: list[tuple[float, NodeRec]], query: NodeRec,
             notes: list[str], question: frozenset[str] = frozenset()) -> tuple[float, NodeRec]:
    """The best-ranked message that tells something: a message that only asks (or meets the
    question only where it asks) is replaced by its reply, or passed over when it has none (the
    first one when every message only asks)."""
    for score, candidate in ranked:
        found: list[str] = []
        seed = _reply_if_asked(view, candidate, query, found, question)
        if not only_asks(view, seed):
            notes.extend(found)
            return score, seed
    score, first = ranked[0]
    return score, _reply_if_asked(view, first, query, notes, question)


def _asks(sentence: str) -> bool:
    return sentence.rstrip().rstrip("\"'”)").endswith("?")


def only_asks(view: GraphView, node: NodeRec) -> bool:
    """Every sentence of the message that says something asks it ("Wow! Did you go?"); a message
    that tells something and then asks back ("I went yesterday. What about you?") is no question."""
    said = [s for s in node_statements(view, node) if s.tokens]
    return bool(said) and all(_asks(part.text) for s in said for part in (s.parts or [s]))


def _asks_what_is_asked(view: GraphView, node: NodeRec, question: frozenset[str]) -> bool:
    """The message meets the question only in a sentence that asks it ("Wow, what a lovely photo!
    How long have you two been married?"): what it tells besides shares less with the question."""
    said = [s for s in node_statements(view, node) if s.tokens]
    asked = [part for s in said for part in (s.parts or [s]) if _asks(part.text)]
    told = [part for s in said for part in (s.parts or [s]) if not _asks(part.text)]
    if not asked or not question:
        return False
    weight = rarity_weights(view, question)

    def share(parts: list[Statement]) -> float:
        return math.fsum(weight[t] for t in sorted(question & frozenset().union(*(p.tokens for p in parts))))

    return share(asked) > share(told)


def _reply_if_asked(view: GraphView, seed: NodeRec, query: NodeRec, notes: list[str],
                    question: frozenset[str] = frozenset()) -> NodeRec:
    """A message that asks what the question asks ("Is Ellie still afraid of dogs?") holds no fact,
    nor does one that only meets the question where it asks; the answer is in the reply that
    follows it: the next message by another speaker that is not a question itself (within the next
    two messages, before the question)."""
    if not only_asks(view, seed) and not _asks_what_is_asked(view, seed, question):
        return seed
    at = _position(view, seed)
    asker = message_speaker(seed)
    for reply in view.messages[at + 1:at + 3]:
        if reply.created_at > query.created_at:
            break
        if message_speaker(reply) != asker and not only_asks(view, reply):
            notes.append(f"{seed.full_node_id} asks it; its reply {reply.full_node_id} is followed")
            return reply
    return seed


def resolve_given(view: GraphView, ids: Sequence[str]) -> tuple[list[NodeRec], list[str]]:
    """The given evidence ids as message nodes (other nodes only when none is a message), and the
    ids not in the graph."""
    found: list[NodeRec] = []
    missing: list[str] = []
    for ev_id in ids:
        node = view.resolve(str(ev_id))
        if node is None:
            missing.append(str(ev_id))
        elif node.full_node_id not in {n.full_node_id for n in found}:
            found.append(node)
    return [n for n in found if is_message(n)] or found, missing


def _tells_asked(fact: Statement, kinds: frozenset[str]) -> bool:
    """The statement tells what kind of thing the question asks for. A count alone ("the 2 younger
    kids love nature") tells no time: for a when-question a number counts only as a year."""
    told = [kind for kind in kinds if kind in fact.anchors]
    if told == ["number"] and "weekday" in kinds:  # the kinds a when-question asks for
        return any(_YEAR.fullmatch(n) for n in fact.anchors["number"])
    return bool(told)


def _closest(facts: list[Statement], question: frozenset[str], kinds: frozenset[str] = frozenset()) -> list[Statement]:
    """Evidence mode: the statements that share the most with the question (all when none does).
    A question that asks when, or how many, is answered by a statement that tells a time or a
    number: one that does not ("Kenji, meet Biscuit!" for "When did Rosa start fostering
    Biscuit?") is passed over when another does ("he arrived on Thursday")."""
    if not facts:
        return []
    facts = [f for f in facts if not _asks(f.text)] or facts  # a question states nothing
    facts = [f for f in facts if _tells_asked(f, kinds)] or facts
    best = max(len(f.tokens & question) for f in facts)
    if best == 0:
        return facts
    return [f for f in facts if len(f.tokens & question) == best]


def _answer_choice(
    view: GraphView,
    seeds: list[NodeRec],
    question: frozenset[str],
    source: str,
    confidence: float,
    spread: int,
    answer: frozenset[str],
    threshold: float,
    notes: list[str],
    unresolved: list[str],
    *,
    restate_from: Sequence[NodeRec],
) -> EvidenceChoice:
    facts = _about_the_question([s for m in seeds for s in answer_statements(view, m, answer, threshold)],
                                question, view.speakers)
    seed_ids = {m.full_node_id for m in seeds}
    rivals: list[Statement] = []
    for other in restate_from:
        if other.full_node_id in seed_ids:
            continue
        other_facts = answer_statements(view, other, answer, threshold)
        if any(_restates(f, o, answer, view) for f in facts for o in other_facts):
            seeds = [*seeds, other]
            seed_ids.add(other.full_node_id)
            notes.append(f"{other.full_node_id} restates the fact")
        else:
            rivals.extend(other_facts)
    return EvidenceChoice(mode="answer", seeds=seeds, facts=facts, source=source, confidence=confidence,
                          answer_spread=spread, notes=notes, unresolved=unresolved, rivals=rivals)


def _about_the_question(facts: list[Statement], question: frozenset[str], names: frozenset[str]) -> list[Statement]:
    """Of several statements that hold the answer, the ones that share the most with the question
    (a message may name the answer twice, only once in the sense the question asks)."""
    if len(facts) < 2:
        return facts
    overlap = [len((f.tokens - names) & question) for f in facts]
    return [f for f, n in zip(facts, overlap, strict=True) if n == max(overlap)]


def _restates(fact: Statement, other: Statement, answer: frozenset[str], view: GraphView) -> bool:
    """``other`` says the fact again: it holds most of the fact's own words (words that most messages
    use, a layer's framing or filler, say nothing about this fact)."""
    common = max(4, len(view.messages) // 2 + 1)
    key = {t for t in fact.tokens - answer - view.speakers if view.document_frequency.get(t, 0) < common}
    return bool(key) and len(key & other.tokens) / len(key) >= _RESTATEMENT_SUPPORT
