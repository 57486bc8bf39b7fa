"""The cases: LoCoMo facts, the faults done to them, and the label each fault gets by construction.

A :class:`Fact` is one question about one LoCoMo message (the *evidence*), with the conversation
slice around it, hand-written turns added to the slice (an unrelated turn that repeats the
answer's words, a near-duplicate about another event) and *variants* of the evidence message:
the same message truncated, negated, with a swapped person, number, date or place, or cut down to
its topic. A :class:`Case` runs one memory system over the slice with one fault that makes the
system lose or change the fact at a known step, and labels it the spec's way
(``spec-attribution.md`` §5.1 items 5–8): never captured → ``ExtractionError`` at the op that lost
it (a buffer update, a document cut, a fact extraction, an ADD decision that said NONE, a memcell
cut, an episode extraction); captured then changed → ``UpdateError``; explicitly removed →
``DeletionError``; stored but kept out of the final context → ``RetrievalError``; in the context
and still answered wrongly → ``ResponseError``.

``kind`` is ``overlap`` (the fault removes the information while the answer's words, or most of
the evidence's words, stay in unrelated text) or ``meaning`` (the words stay, the meaning changes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CASES", "FACTS", "Case", "Fact"]


@dataclass(frozen=True)
class Fact:
    """A question about one message, and what a fault can turn that message into."""

    key: str
    sample: int
    sessions: dict[int, int | None]
    evidence: str
    question: str
    golden: list[str]
    wrong: str
    variants: dict[str, tuple[str, str]] = field(default_factory=dict)
    """name → (speaker, message text) as a faulty step read the evidence message."""
    added: list[tuple[str, str, str, str]] = field(default_factory=list)
    """(after dia id, new dia id, speaker, text) turns added to the slice."""
    mem0_facts: dict[str, list[str]] = field(default_factory=dict)
    """Facts a sound extractor writes for messages whose key sentence is too short for the default."""
    question_type: str = "single-hop"
    paraphrase: str = ""
    """How a sound model that rewords (a fact, an episode sentence) writes the evidence, for cases
    that ask for it."""


FACTS: dict[str, Fact] = {f.key: f for f in [
    Fact("adoption", 0, {1: 6, 2: 9}, "D2:8", "What did Caroline research?", ["Adoption agencies"],
         "Summer camps for the kids",
         variants={
             "cut": ("Caroline", "Researching"),
             "person": ("Melanie", "Researching adoption agencies — it's been a dream to have a family and give a "
                                   "loving home to kids who need it."),
             "negation": ("Caroline", "Not researching adoption agencies yet — it's been a dream to have a family "
                                      "someday, but not now."),
             "partial": ("Caroline", "It's been a dream to have a family and give a loving home to kids who need it."),
         },
         added=[("D2:9", "D2:18", "Melanie", "My friend works at one of those adoption agencies downtown, as a "
                                             "receptionist. She says the phones never stop!"),
                ("D2:9", "D2:19", "Melanie", "Caroline, I did some research on summer camps for the kids last week, "
                                             "so many options!")]),
    Fact("friends", 0, {3: 16}, "D3:13", "How long has Caroline had her current group of friends for?", ["4 years"],
         "5 years",
         variants={
             "cut": ("Caroline", "Yeah, I'm really lucky to have them. They've been there through everything."),
             "number": ("Caroline", "Yeah, I'm really lucky to have them. They've been there through everything, "
                                    "I've known these friends for 14 years, since I moved from my home country. Their "
                                    "love and help have been so important especially after that tough breakup. I'm "
                                    "super thankful. Who supports you, Mel?"),
         },
         added=[("D3:14", "D3:24", "Melanie", "We've had our dog Luna for 4 years now, she's part of the family too.")]),
    Fact("sweden", 0, {4: 8}, "D4:3", "What country is Caroline's grandma from?", ["Sweden"], "Norway",
         variants={
             "cut": ("Caroline", "Thanks, Melanie! This necklace is super special to me."),
             "place": ("Caroline", "Thanks, Melanie! This necklace is super special to me - a gift from my grandma in "
                                   "my home country, Norway. She gave it to me when I was young, and it stands for "
                                   "love, faith and strength. It's like a reminder of my roots and all the love and "
                                   "support I get from my family."),
         },
         added=[("D4:4", "D4:19", "Melanie", "The kids built a little Sweden flag out of Lego after we watched a show "
                                             "about the Olympics.")]),
    Fact("happy", 0, {1: 8, 3: 23}, "D1:5",
         "How did Caroline feel after hearing the transgender stories at the support group?", ["happy and thankful"],
         "Alive and excited",
         variants={
             "cut": ("Caroline", "The transgender stories were so inspiring!"),
             "person": ("Melanie", "The transgender stories were so inspiring! I was so happy and thankful for all "
                                   "the support."),
         }),
    Fact("married", 0, {3: 18}, "D3:16", "How long has Melanie been married?", ["5 years"], "15 years",
         variants={
             "number": ("Melanie", "15 years already! Time flies- feels like just yesterday I put this dress on! "
                                   "Thanks, Caroline!"),
         },
         added=[("D3:18", "D3:25", "Caroline", "My cousin's wedding was 5 years ago too, in a little chapel by the "
                                               "sea.")],
         mem0_facts={"D3:16": ["Melanie has been married for 5 years already.",
                               "Time flies - it feels like just yesterday Melanie put on her wedding dress."],
                     "D3:16/number": ["Melanie has been married for 15 years already.",
                                      "Time flies - it feels like just yesterday Melanie put on her wedding dress."]}),
    Fact("marley", 1, {1: 8, 2: 8}, "D2:8", "What kind of flooring is Jon looking for in his dance studio?",
         ["Marley flooring"], "Hardwood flooring",
         paraphrase="For his dance studio, Jon wants Marley flooring because it is grippy, tough and easy to clean.",
         variants={
             "swap": ("Jon", "Yeah, good flooring's crucial. I'm after hardwood flooring, which is what dance studios "
                             "usually use. It's great 'cause it's grippy but still lets you move, plus it's tough and "
                             "easy to keep clean."),
             "partial": ("Jon", "Yeah, good flooring's crucial for a dance studio."),
             "person": ("Gina", "Yeah, good flooring's crucial. I'm after Marley flooring, which is what dance studios "
                                "usually use. It's great 'cause it's grippy but still lets you move, plus it's tough "
                                "and easy to keep clean."),
         },
         added=[("D2:3", "D2:13", "Gina", "My store has hardwood flooring, it's what boutiques usually use, and "
                                          "customers love how it looks.")]),
    Fact("contemporary", 1, {1: 14}, "D1:9", "What is Gina's favorite style of dance?", ["Contemporary"], "Hip-hop",
         variants={
             "person": ("Jon", "Yeah, me too! Contemporary dance is so expressive and graceful - it really speaks to "
                               "me."),
         }),
    Fact("yoga", 2, {1: 14}, "D1:3", "What type of workout class did Maria start doing?", ["aerial yoga"],
         "Kickboxing", paraphrase="Maria recently started taking aerial yoga classes and loves them.",
         variants={
             "person": ("John", "Been busy volunteering at the homeless shelter and keeping fit. Just started doing "
                                "aerial yoga, it's great."),
             "negation": ("Maria", "Been busy volunteering at the homeless shelter and keeping fit. Haven't started "
                                   "doing aerial yoga yet, it's not for me."),
             "cut": ("Maria", "Been busy volunteering at the homeless shelter and keeping fit."),
         },
         added=[("D1:2", "D1:15", "John", "The community center posted a flyer for aerial yoga, but I'm sticking to "
                                          "kickboxing for now.")]),
    Fact("car", 2, {1: 6, 2: 12}, "D2:1", "What did Maria donate to a homeless shelter?", ["old car"], "Clothes", paraphrase="Maria donated her old car to the homeless shelter where she volunteers.",
         variants={
             "negation": ("Maria", "Hey John, been a few days since we chatted. In the meantime, I didn't donate my "
                                   "old car to the homeless shelter I volunteer at after all. How's the campaign going?"),
             "cut": ("Maria", "Hey John, been a few days since we chatted. How's the campaign going? I'm keen to hear "
                              "about it."),
         }),
    Fact("pizza", 2, {2: 24}, "D2:24", "What kind of meal did John and his family make together?", ["pizza"], "Pasta",
         paraphrase="John and his family made pizza together and enjoyed picking the toppings.",
         variants={
             "cut": ("John", "We had so much fun making them together."),
             "person": ("Maria", "We made pizza! We had so much fun making them together. It was great picking out "
                                 "toppings and sharing a tasty meal with family."),
         },
         added=[("D2:17", "D2:27", "Maria", "We ordered pizza during our last game night at my place, nobody wanted to "
                                            "cook.")]),
    Fact("turtles", 3, {2: 14}, "D2:12", "For how long has Nate had his turtles?", ["3 years"], "A few months",
         paraphrase="Nate has had his two turtles for 3 years; they bring him a lot of joy.",
         variants={
             "number": ("Nate", "I've had them for 13 years now and they bring me tons of joy!"),
             "cut": ("Nate", "They bring me tons of joy!"),
         },
         added=[("D2:5", "D2:15", "Joanna", "It took me 3 years to write, on and off, mostly at night.")]),
    Fact("little_women", 3, {3: 18}, "D3:17", "What movie did Joanna recently watch and recommend to Nate?",
         ["Little Women"], "Frozen",
         variants={
             "swap": ("Joanna", "I just watched \"Pride and Prejudice\" and it was amazing! It's a great story about "
                                "sisterhood, love, and reaching for your dreams. Definitely a must-see!"),
             "cut": ("Joanna", "Definitely a must-see!"),
         },
         added=[("D3:12", "D3:19", "Nate", "My little cousins and the women from the bakery loved that cake, it was "
                                           "gone in minutes.")]),
    Fact("screenplay", 3, {2: 9}, "D2:3", "When did Joanna finish her first full screenplay?",
         ["The Friday before 23 January 2022"], "In December 2021",
         variants={
             "date": ("Joanna", "Woo! I finally finished my first full screenplay and printed it last month. I've been "
                                "working on for a while, such a relief to have it all done!"),
         }, question_type="temporal"),
    Fact("points", 4, {3: 10}, "D3:1", "What was the highest number of points John scored in a game recently?",
         ["40 points"], "30 points",
         variants={
             "number": ("John", "Hey Tim! Good to see you again. So much has happened in the last month - on and off "
                                "the court. Last week I scored 30 points, my highest ever, and it feels like all my "
                                "hard work's paying off."),
         },
         added=[("D3:2", "D3:31", "Tim", "I read 40 pages of my fantasy novel last night, and my book club gave me "
                                         "points for it.")]),
    Fact("seattle", 4, {3: 19}, "D3:19", "Which city is John excited to have a game at?", ["Seattle"], "Portland",
         variants={
             "place": ("John", "It's Portland, I'm stoked for my game there next month! It's one of my favorite cities "
                               "to explore - super vibrant!"),
         }),
    Fact("surfing", 4, {3: 30}, "D3:27", "How long has John been surfing?", ["five years"], "Two years",
         variants={
             "negation": ("John", "I didn't start surfing five years ago, I only picked it up this summer. I love the "
                                  "connection to nature."),
             "number": ("John", "I started surfing two years ago and it's been great. I love the connection to "
                                "nature."),
         }),
    Fact("eagles", 5, {1: 18}, "D1:16", "Which specific type of bird mesmerizes Andrew?", ["Eagles"], "Hawks",
         variants={
             "swap": ("Andrew", "Hawks have always mesmerized me; they're so strong and graceful!"),
         },
         added=[("D1:16", "D1:19", "Audrey", "Hawks have always mesmerized my neighbour; she photographs them every "
                                             "weekend.")]),
    Fact("support_group", 0, {1: 12}, "D1:3", "When did Caroline go to the LGBTQ support group?", ["7 May 2023"],
         "April 2023",
         variants={
             "date": ("Caroline", "I went to a LGBTQ support group last month and it was so powerful."),
             "partial": ("Caroline", "I went to a LGBTQ support group and it was so powerful."),
         }, question_type="temporal"),
    Fact("glad", 1, {1: 28, 2: 12}, "D1:28", "What is Jon's attitude towards being part of the dance festival?",
         ["Glad"], "Nervous",
         variants={"cut": ("Jon", "Yeah, awesome!")},
         mem0_facts={"D1:28": ["Jon is glad to be part of the dance festival."]}),
    Fact("wolves", 4, {1: 12}, "D1:5", "Which team did John sign with?", ["The Minnesota Wolves"],
         "A team in Seattle",
         variants={"cut": ("John", "I can't wait to play with them!")},
         mem0_facts={"D1:5": ["John signed with the Minnesota Wolves and can't wait to play with them."]}),
    Fact("guard", 4, {1: 12}, "D1:7", "What is John's position on the team he signed with?", ["shooting guard"],
         "Small forward",
         variants={
             "cut": ("John", "Our season opener is next week - so excited!"),
             "person": ("Tim", "I'm a shooting guard for the team and our season opener is next week - so excited!"),
         }),
    Fact("dogs", 5, {1: 14}, "D1:7", "What are the names of Audrey's dogs?", ["Pepper, Precious and Panda"],
         "Pepper, Peanut and Panda",
         variants={
             "person": ("Andrew", "I've had them for 3 years! Their names are Pepper, Precious and Panda. I can't live "
                                  "without my little ones!"),
         }),
    Fact("friends2", 0, {3: 16}, "D3:13", "How long has Caroline had her current group of friends for?", ["4 years"],
         "5 years",
         variants={
             "cut": ("Caroline", "Yeah, I'm really lucky to have them. They've been there through everything."),
         },
         added=[("D3:14", "D3:24", "Caroline", "I've known my therapist for 4 years, since I moved here; she has been "
                                               "there through everything.")]),
    Fact("walk", 5, {1: 14}, "D1:20", "How many miles does Audrey walk her dogs each time?", ["2 miles"], "3 miles",
         variants={"number": ("Audrey", "I walk my 2 dogs twice a day, 3 miles each time, rain or shine.")},
         added=[("D1:9", "D1:20", "Audrey", "I walk my 3 dogs twice a day, 2 miles each time, rain or shine.")]),
    Fact("camping", 0, {2: 9}, "D2:7", "When is Melanie planning on going camping?", ["June 2023"], "July 2023",
         variants={
             "date": ("Melanie", "Thanks, Caroline. It's still a work in progress, but I'm doing my best. My kids are "
                                 "so excited about summer break! We're thinking about going camping next year. Any fun "
                                 "plans for the summer?"),
             "partial": ("Melanie", "Thanks, Caroline. It's still a work in progress, but I'm doing my best. My kids "
                                    "are so excited about summer break! Any fun plans for the summer?"),
         }, question_type="temporal",
         paraphrase="Melanie and her family are planning a camping trip next month, in June 2023."),
]}


@dataclass(frozen=True)
class Case:
    """One labelled failure: a system, a fact, a fault and the op it hit."""

    system: str
    kind: str
    fault: str
    error_type: str
    fact: str
    step: str
    """How the fault is applied (see ``build.plan_for``)."""
    variant: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    prediction: str | None = None


def _c(system: str, kind: str, fault: str, error_type: str, fact: str, step: str, variant: str | None = None,
       prediction: str | None = None, **options: Any) -> Case:
    return Case(system, kind, fault, error_type, fact, step, variant, options, prediction)


E, U, D, R, A = "ExtractionError", "UpdateError", "DeletionError", "RetrievalError", "ResponseError"

CASES: list[Case] = [
    # ------------------------------------------------------------------ Long-Context
    _c("long_context", "overlap", "append/cut", E, "adoption", "store", "cut"),
    _c("long_context", "overlap", "append/cut", E, "friends", "store", "cut"),
    _c("long_context", "overlap", "trim", U, "car", "trim"),
    _c("long_context", "overlap", "trim", U, "turtles", "trim"),
    _c("long_context", "overlap", "trim", U, "sweden", "trim", separate_trim=True),
    _c("long_context", "overlap", "trim", U, "wolves", "trim", separate_trim=True),
    _c("long_context", "overlap", "retrieval/stale", R, "glad", "stale"),
    _c("long_context", "overlap", "retrieval/stale", R, "pizza", "stale", non_strict=True),
    _c("long_context", "overlap", "response/ignore", A, "happy", "answer"),
    _c("long_context", "overlap", "response/ignore", A, "little_women", "answer"),
    _c("long_context", "meaning", "append/person", E, "contemporary", "store", "person"),
    _c("long_context", "meaning", "append/number", E, "married", "store", "number"),
    _c("long_context", "meaning", "append/negation", E, "car", "store", "negation"),
    _c("long_context", "meaning", "append/number", E, "points", "store", "number"),
    _c("long_context", "meaning", "compaction/partial", U, "adoption", "rewrite", "partial"),
    _c("long_context", "meaning", "compaction/date", U, "support_group", "rewrite", "date"),
    _c("long_context", "meaning", "compaction/place", U, "sweden", "rewrite", "place", separate_trim=True),
    _c("long_context", "meaning", "retrieval/stale", R, "marley", "stale"),
    _c("long_context", "meaning", "response/near_duplicate", A, "marley", "answer"),
    _c("long_context", "meaning", "response/other_speaker", A, "contemporary", "answer"),
    # ------------------------------------------------------------------ NaiveRAG
    _c("rag", "overlap", "buffer/cut", E, "friends", "store", "cut"),
    _c("rag", "overlap", "document/omit", E, "adoption", "cut"),
    _c("rag", "overlap", "document/omit", E, "pizza", "cut"),
    _c("rag", "overlap", "add/cut", E, "turtles", "add", "cut"),
    _c("rag", "overlap", "retrieval/skip", R, "car", "hide"),
    _c("rag", "overlap", "retrieval/skip", R, "happy", "hide"),
    _c("rag", "overlap", "retrieval/skip", R, "little_women", "hide"),
    _c("rag", "overlap", "dedup/delete", D, "yoga", "dedup", keep="D1:15", budget_words=30),
    _c("rag", "overlap", "response/ignore", A, "glad", "answer"),
    _c("rag", "overlap", "response/ignore", A, "sweden", "answer"),
    _c("rag", "overlap", "consolidate/drop", U, "guard", "consolidate", "cut", other="D1:11", budget_words=70),
    _c("rag", "meaning", "buffer/person", E, "contemporary", "store", "person"),
    _c("rag", "meaning", "add/negation", E, "surfing", "add", "negation"),
    _c("rag", "meaning", "buffer/number", E, "married", "store", "number"),
    _c("rag", "meaning", "add/place", E, "sweden", "add", "place"),
    _c("rag", "meaning", "retrieval/near_duplicate", R, "adoption", "hide", push="D2:19"),
    _c("rag", "meaning", "retrieval/near_duplicate", R, "yoga", "hide", push="D1:15"),
    _c("rag", "meaning", "consolidate/person", U, "marley", "consolidate", "person", other="D2:13"),
    _c("rag", "meaning", "consolidate/date", U, "screenplay", "consolidate", "date", other="D2:7"),
    _c("rag", "meaning", "dedup/near_duplicate", D, "eagles", "dedup", keep="D1:19", budget_words=30),
    _c("rag", "meaning", "response/inferred_date", A, "support_group", "answer", prediction="8 May 2023"),
    _c("rag", "meaning", "response/swap", A, "dogs", "answer"),
    # ------------------------------------------------------------------ Mem0
    _c("mem0", "overlap", "extract/cut", E, "happy", "facts", "cut"),
    _c("mem0", "overlap", "extract/cut", E, "pizza", "facts", "cut"),
    _c("mem0", "overlap", "extract/cut", E, "friends", "facts", "cut"),
    _c("mem0", "overlap", "decision/none", E, "car", "none", similar="D1:3"),
    _c("mem0", "overlap", "decision/none", E, "yoga", "none", similar="D1:15"),
    _c("mem0", "overlap", "update/overwrite", U, "turtles", "update", at="D2:14",
       text="Nate has turtles; they might be small, but both have big personalities."),
    _c("mem0", "overlap", "update/overwrite", U, "sweden", "update", at="D4:5",
       text="Caroline treasures a hand-painted bowl a friend made for her 18th birthday."),
    _c("mem0", "overlap", "delete", D, "little_women", "delete", at="D3:18"),
    _c("mem0", "overlap", "delete", D, "adoption", "delete", at="D2:18"),
    _c("mem0", "overlap", "retrieval/skip", R, "glad", "hide"),
    _c("mem0", "overlap", "retrieval/skip", R, "wolves", "hide"),
    _c("mem0", "overlap", "response/ignore", A, "guard", "answer"),
    _c("mem0", "overlap", "response/ignore", A, "surfing", "answer"),
    _c("mem0", "meaning", "extract/person", E, "adoption", "facts", "person"),
    _c("mem0", "meaning", "extract/number", E, "turtles", "facts", "number"),
    _c("mem0", "meaning", "extract/place", E, "seattle", "facts", "place"),
    _c("mem0", "meaning", "extract/negation", E, "yoga", "facts", "negation"),
    _c("mem0", "meaning", "extract/partial", E, "marley", "facts", "partial"),
    _c("mem0", "meaning", "extract/date", E, "support_group", "facts", "date"),
    _c("mem0", "meaning", "update/person", U, "contemporary", "update", at="D1:11",
       text="Jon finds contemporary dance so expressive and graceful - it really speaks to him."),
    _c("mem0", "meaning", "update/number", U, "points", "update", at="D3:3",
       text="Last week John scored 30 points, his highest ever, an incredible experience."),
    _c("mem0", "meaning", "update/person", U, "dogs", "update", at="D1:9",
       text="Andrew has had his dogs for 3 years; their names are Pepper, Precious and Panda."),
    _c("mem0", "meaning", "delete/near_duplicate", D, "married", "delete", at="D3:25"),
    _c("mem0", "meaning", "retrieval/near_duplicate", R, "marley", "hide", push="D2:13"),
    _c("mem0", "meaning", "retrieval/near_duplicate", R, "eagles", "hide", push="D1:19"),
    _c("mem0", "meaning", "response/other_speaker", A, "contemporary", "answer"),
    # ------------------------------------------------------------------ EverMemOS
    _c("evermemos", "overlap", "episode/cut", E, "friends", "episode", "cut"),
    _c("evermemos", "overlap", "episode/cut", E, "pizza", "episode", "cut"),
    _c("evermemos", "overlap", "episode/cut", E, "glad", "episode", "cut"),
    _c("evermemos", "overlap", "memcell/lose", E, "car", "memcell"),
    _c("evermemos", "overlap", "buffer/lose", E, "little_women", "buffer_lose"),
    _c("evermemos", "overlap", "retrieval/round1", R, "happy", "hide"),
    _c("evermemos", "overlap", "retrieval/hybrid", R, "turtles", "hide", agentic=False),
    _c("evermemos", "overlap", "retrieval/final_rerank", R, "adoption", "final_hide"),
    _c("evermemos", "overlap", "response/ignore", A, "sweden", "answer"),
    _c("evermemos", "overlap", "response/ignore", A, "guard", "answer"),
    _c("evermemos", "overlap", "episode/cut", E, "wolves", "episode", "cut"),
    _c("evermemos", "meaning", "episode/person", E, "yoga", "episode", "person"),
    _c("evermemos", "meaning", "episode/number", E, "married", "episode", "number"),
    _c("evermemos", "meaning", "episode/place", E, "seattle", "episode", "place"),
    _c("evermemos", "meaning", "episode/negation", E, "surfing", "episode", "negation"),
    _c("evermemos", "meaning", "episode/partial", E, "adoption", "episode", "partial"),
    _c("evermemos", "meaning", "buffer/number", E, "points", "store", "number"),
    _c("evermemos", "meaning", "retrieval/near_duplicate", R, "marley", "hide", push="D2:13"),
    _c("evermemos", "meaning", "retrieval/final_near_duplicate", R, "eagles", "final_hide", push="D1:19"),
    _c("evermemos", "meaning", "response/inferred_date", A, "support_group", "answer"),
    _c("evermemos", "meaning", "response/other_speaker", A, "contemporary", "answer"),
    _c("evermemos", "meaning", "episode/date", E, "screenplay", "episode", "date"),
    # ------------------------------------------------------------------ second batch: harder variations
    # the same speaker says the answer about something else, in the same memory unit as the evidence
    _c("long_context", "overlap", "trim", U, "friends2", "trim"),
    _c("rag", "overlap", "document/omit", E, "friends2", "cut"),
    _c("evermemos", "overlap", "episode/cut", E, "friends2", "episode", "cut"),
    _c("mem0", "overlap", "extract/cut", E, "friends2", "facts", "cut"),
    _c("long_context", "overlap", "response/ignore", A, "friends2", "answer", repr_memory=True),
    _c("rag", "meaning", "retrieval/near_duplicate", R, "friends2", "hide", push="D3:24", overlap=1),
    # implementation variants: repr-encoded long-context memory, overlapping documents, Mem0 facts
    # as the speaker said them, models that reword, correct updates before the fault
    _c("long_context", "overlap", "trim", U, "glad", "trim", repr_memory=True),
    _c("rag", "overlap", "retrieval/skip", R, "sweden", "hide", overlap=1),
    _c("mem0", "overlap", "retrieval/skip", R, "car", "hide", paraphrase=True,
       refresh=("D2:11", "Maria donated her old car to the homeless shelter where she volunteers, and she values "
                         "quality time with friends.")),
    _c("mem0", "overlap", "response/ignore", A, "pizza", "answer", paraphrase=True),
    _c("mem0", "overlap", "delete", D, "yoga", "delete", at="D1:13", paraphrase=True,
       refresh=("D1:5", "Maria started aerial yoga recently and keeps fit with it while volunteering at the shelter.")),
    _c("evermemos", "overlap", "retrieval/round1", R, "car", "hide", paraphrase=True),
    _c("evermemos", "overlap", "response/ignore", A, "turtles", "answer", paraphrase=True),
    _c("mem0", "overlap", "extract/cut", E, "turtles", "facts", "cut", anonymous_facts=True),
    _c("mem0", "overlap", "retrieval/skip", R, "marley", "hide", anonymous_facts=True),
    _c("evermemos", "overlap", "buffer/lose", E, "pizza", "buffer_lose"),
    # meaning changes that keep every word: numbers swapped inside the evidence, relative dates
    _c("mem0", "meaning", "extract/number_inside", E, "walk", "facts", "number"),
    _c("evermemos", "meaning", "episode/number_inside", E, "walk", "episode", "number"),
    _c("long_context", "meaning", "append/number_inside", E, "walk", "store", "number"),
    _c("rag", "meaning", "add/number_inside", E, "walk", "add", "number"),
    _c("mem0", "meaning", "extract/date", E, "camping", "facts", "date"),
    _c("evermemos", "meaning", "episode/date", E, "camping", "episode", "date"),
    _c("long_context", "meaning", "compaction/date", U, "camping", "rewrite", "date"),
    _c("rag", "meaning", "response/inferred_date", A, "camping", "answer"),
    _c("evermemos", "meaning", "episode/partial", E, "camping", "episode", "partial", paraphrase=True),
    _c("mem0", "meaning", "extract/person", E, "yoga", "facts", "person", anonymous_facts=True),
    _c("mem0", "meaning", "update/person", U, "contemporary", "update", at="D1:11", anonymous_facts=True,
       text="Jon finds contemporary dance so expressive and graceful - it really speaks to him."),
    _c("long_context", "meaning", "append/person", E, "adoption", "store", "person", repr_memory=True),
    _c("mem0", "meaning", "update/person", U, "car", "update", at="D2:12", paraphrase=True,
       text="John donated his old car to the homeless shelter Maria volunteers at."),
    _c("mem0", "meaning", "extract/negation", E, "car", "facts", "negation", paraphrase=True),
]
