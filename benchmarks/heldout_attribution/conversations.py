"""Two hand-written conversations, their questions and the ways each fact can go wrong.

Written for this benchmark (not taken from LoCoMo): every fact has neighbours that share its
words — the other speaker's painting, another race on another date, another pet, the other
child's instrument, "four nights" said twice — so that word overlap alone cannot tell the
evidence from a distractor. Answers are often common words ("No", "two", "green").

Each message carries the third-person facts a memory system should extract from it. Each
question names its evidence messages and, per fault, the corrupted memory text (a third-person
fact for Mem0/EverMemOS, a first-person message line for Long-Context/NaiveRAG) and the wrong
answer a reader of that memory would give.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CONVERSATIONS", "Conversation", "ConvSession", "Message", "Question", "Rewrite", "by_qid"]


@dataclass(frozen=True, kw_only=True)
class Message:
    id: str
    """LoCoMo-style id ``U<sample>:D<session>:<turn>`` (the message node's name)."""
    speaker: str
    text: str
    facts: tuple[str, ...] = ()
    """Third-person facts an ideal extractor keeps (empty for small talk)."""


@dataclass(frozen=True, kw_only=True)
class ConvSession:
    id: str
    date_time: str
    """ISO timestamp shared by every message of the session (LoCoMo's convention)."""
    messages: tuple[Message, ...]


@dataclass(frozen=True, kw_only=True)
class Conversation:
    id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[ConvSession, ...]
    questions: tuple[Question, ...]

    def messages(self) -> list[Message]:
        return [m for s in self.sessions for m in s.messages]

    def message(self, message_id: str) -> Message:
        for m in self.messages():
            if m.id == message_id:
                return m
        raise KeyError(message_id)

    def session_of(self, message_id: str) -> ConvSession:
        for s in self.sessions:
            if any(m.id == message_id for m in s.messages):
                return s
        raise KeyError(message_id)


@dataclass(frozen=True, kw_only=True)
class Rewrite:
    """A wrong version of one evidence fact."""

    kind: str
    """What the corruption does: negate, swap_date, swap_number, swap_person, swap_place, vague."""
    fact: str
    """The corrupted third-person fact (Mem0 memory, EverMemOS episode sentence)."""
    text: str = ""
    """The corrupted first-person message line (Long-Context compaction); empty if unused."""
    prediction: str = ""


@dataclass(frozen=True, kw_only=True)
class LaterChange:
    """A later message whose memory update touches the evidence unit."""

    trigger: str
    """Id of the later message whose update decision rewrites the unit."""
    text: str = ""
    """The unit's memory text after the update (empty for a deletion)."""
    prediction: str = ""


@dataclass(frozen=True, kw_only=True)
class Question:
    qid: str
    text: str
    answers: tuple[str, ...]
    evidence: tuple[str, ...]
    question_type: str
    category_id: int
    wrong: str
    """The wrong answer given when the fact is missing or ignored (often a distractor's value)."""
    fact_index: int = 0
    """Which fact of the (first) evidence message states the answer."""
    rewrite: Rewrite | None = None
    vague: Rewrite | None = None
    """An over-summarised version that keeps the topic and drops the answer."""
    degrade: LaterChange | None = None
    """A later UPDATE that loses or changes the answer."""
    delete: LaterChange | None = None
    """A later DELETE of the evidence unit."""
    enrich: LaterChange | None = None
    """A later UPDATE that keeps the answer (locally correct)."""
    meta: dict[str, str] = field(default_factory=dict)


def _m(mid: str, speaker: str, text: str, *facts: str) -> Message:
    return Message(id=mid, speaker=speaker, text=text, facts=tuple(facts))


_A_SESSIONS = (
    ConvSession(id="heldout-1-session-1", date_time="2023-05-08T13:56:00", messages=(
        _m("U1:D1:1", "Priya", "Hey Tomas! Long week. How have you been?"),
        _m("U1:D1:2", "Tomas", "Good! I finally finished my painting of the harbor, the one with the red boats.",
           "Tomas finished a painting of the harbor with red boats"),
        _m("U1:D1:3", "Priya", "Lovely! I painted this weekend too, a blue sunset over the lake.",
           "Priya painted a blue sunset over the lake this weekend"),
        _m("U1:D1:4", "Tomas", "Did you make it to the pottery class on Thursday?"),
        _m("U1:D1:5", "Priya", "No, I skipped pottery this week and went to the climbing gym with my sister Anya instead.",
           "Priya skipped her pottery class on Thursday this week",
           "Priya went to the climbing gym with her sister Anya"),
        _m("U1:D1:6", "Tomas", "Climbing is fun. My brother Luis took me climbing in Denver two years ago.",
           "Tomas went climbing in Denver with his brother Luis two years ago"),
        _m("U1:D1:7", "Priya", "Also, I adopted two cats last month, Miso and Pepper!",
           "Priya adopted two cats, Miso and Pepper, last month"),
        _m("U1:D1:8", "Tomas", "I only have my dog Biscuit, and two cats would drive him crazy.",
           "Tomas has a dog named Biscuit"),
    )),
    ConvSession(id="heldout-1-session-2", date_time="2023-05-25T19:10:00", messages=(
        _m("U1:D2:1", "Tomas", "Big news: I signed up for the Lisbon half marathon on 18 June.",
           "Tomas signed up for the Lisbon half marathon on 18 June"),
        _m("U1:D2:2", "Priya", "Wow! I ran the Porto 10k on 4 June last year.",
           "Priya ran the Porto 10k on 4 June last year"),
        _m("U1:D2:3", "Tomas", "I've been training with Luis three mornings a week.",
           "Tomas trains with Luis three mornings a week"),
        _m("U1:D2:4", "Priya", "Anya says she wants to run the Lisbon half marathon too, but next year, not this one.",
           "Anya wants to run the Lisbon half marathon next year"),
        _m("U1:D2:5", "Tomas", "Tell her to come and cheer! Is Miso still scratching the sofa?"),
        _m("U1:D2:6", "Priya", "Yes, Miso still scratches the green sofa, but Pepper prefers the red armchair.",
           "Priya's cat Miso still scratches the green sofa",
           "Priya's cat Pepper prefers the red armchair"),
        _m("U1:D2:7", "Tomas", "Ha, Biscuit chews on the red armchair at my place.",
           "Tomas's dog Biscuit chews on the red armchair"),
    )),
    ConvSession(id="heldout-1-session-3", date_time="2023-07-02T10:30:00", messages=(
        _m("U1:D3:1", "Priya", "So, how was Lisbon?"),
        _m("U1:D3:2", "Tomas", "I finished in 1 hour 52 minutes! Luis was slower, 2 hours 5 minutes.",
           "Tomas finished the Lisbon half marathon in 1 hour 52 minutes",
           "Luis finished the Lisbon half marathon in 2 hours 5 minutes"),
        _m("U1:D3:3", "Priya", "Amazing. I started a portrait of Anya for her birthday on 12 July.",
           "Priya started painting a portrait of Anya",
           "Anya's birthday is on 12 July"),
        _m("U1:D3:4", "Tomas", "Is the party at your place?"),
        _m("U1:D3:5", "Priya", "No, it's at Anya's flat in Brighton, not at my place.",
           "Anya's birthday party is at Anya's flat in Brighton"),
        _m("U1:D3:6", "Tomas", "I'll be in Brighton on 12 August for a work trip, a month too late.",
           "Tomas will be in Brighton on 12 August for a work trip"),
        _m("U1:D3:7", "Priya", "I'm learning Portuguese because I'm moving to Porto in September.",
           "Priya is learning Portuguese because she is moving to Porto in September"),
        _m("U1:D3:8", "Tomas", "Luis is learning Portuguese too, but just for his job.",
           "Luis is learning Portuguese for his job"),
    )),
)

_A_QUESTIONS = (
    Question(
        qid="heldout-qa-1-1", text="Did Priya go to the pottery class on Thursday?", answers=("No",),
        evidence=("U1:D1:5",), question_type="single-hop", category_id=4, wrong="Yes",
        rewrite=Rewrite(kind="negate", fact="Priya went to her pottery class on Thursday this week",
                        text="Yes, I went to pottery this week and then to the climbing gym with my sister Anya.",
                        prediction="Yes, she went on Thursday."),
        vague=Rewrite(kind="vague", fact="Priya has a pottery class", prediction="Yes"),
    ),
    Question(
        qid="heldout-qa-1-2", text="How many cats did Priya adopt?", answers=("two",),
        evidence=("U1:D1:7",), question_type="single-hop", category_id=4, wrong="one",
        rewrite=Rewrite(kind="swap_number", fact="Priya adopted one cat, Miso, last month",
                        text="Also, I adopted one cat last month, Miso, and I'm fostering Pepper!",
                        prediction="one"),
        vague=Rewrite(kind="vague", fact="Priya adopted cats last month", prediction="three"),
        degrade=LaterChange(trigger="U1:D2:6", text="Priya's cat Miso still scratches the green sofa",
                            prediction="one"),
        enrich=LaterChange(trigger="U1:D2:6",
                           text="Priya adopted two cats, Miso and Pepper, last month; Miso scratches the green sofa"),
    ),
    Question(
        qid="heldout-qa-1-3", text="When is Tomas running the Lisbon half marathon?", answers=("18 June",),
        evidence=("U1:D2:1",), question_type="temporal", category_id=2, wrong="4 June",
        rewrite=Rewrite(kind="swap_person", fact="Anya signed up for the Lisbon half marathon on 18 June",
                        text="Big news: Anya signed up for the Lisbon half marathon on 18 June.",
                        prediction="He is not running it; Anya is."),
        vague=Rewrite(kind="vague", fact="Tomas signed up for a half marathon", prediction="next year"),
        degrade=LaterChange(trigger="U1:D2:4", text="Tomas and Anya want to run the Lisbon half marathon next year",
                            prediction="next year"),
        delete=LaterChange(trigger="U1:D2:4", prediction="next year"),
        enrich=LaterChange(trigger="U1:D2:4",
                           text="Tomas signed up for the Lisbon half marathon on 18 June; Anya wants to run it next year"),
    ),
    Question(
        qid="heldout-qa-1-4", text="How many mornings a week does Tomas train with Luis?", answers=("three",),
        evidence=("U1:D2:3",), question_type="single-hop", category_id=4, wrong="two",
        rewrite=Rewrite(kind="swap_number", fact="Tomas trains with Luis two mornings a week",
                        text="I've been training with Luis two mornings a week.", prediction="two"),
        vague=Rewrite(kind="vague", fact="Tomas trains with Luis", prediction="every morning"),
    ),
    Question(
        qid="heldout-qa-1-5", text="Which piece of furniture does Pepper prefer?", answers=("the red armchair",),
        evidence=("U1:D2:6",), question_type="single-hop", category_id=4, wrong="the green sofa", fact_index=1,
        rewrite=Rewrite(kind="swap_person", fact="Priya's cat Miso prefers the red armchair",
                        text="Yes, Pepper still scratches the green sofa, but Miso prefers the red armchair.",
                        prediction="the green sofa"),
        degrade=LaterChange(trigger="U1:D2:7", text="Tomas's dog Biscuit chews on the red armchair",
                            prediction="the green sofa"),
        delete=LaterChange(trigger="U1:D2:7", prediction="the green sofa"),
    ),
    Question(
        qid="heldout-qa-1-6", text="What was Tomas's finishing time in Lisbon?", answers=("1 hour 52 minutes",),
        evidence=("U1:D3:2",), question_type="single-hop", category_id=4, wrong="2 hours 5 minutes",
        rewrite=Rewrite(kind="swap_person", fact="Luis finished the Lisbon half marathon in 1 hour 52 minutes",
                        text="Luis finished in 1 hour 52 minutes! I was slower, 2 hours 5 minutes.",
                        prediction="2 hours 5 minutes"),
        vague=Rewrite(kind="vague", fact="Tomas finished the Lisbon half marathon", prediction="about two hours"),
    ),
    Question(
        qid="heldout-qa-1-7", text="When is Anya's birthday?", answers=("12 July",),
        evidence=("U1:D3:3",), question_type="temporal", category_id=2, wrong="12 August", fact_index=1,
        rewrite=Rewrite(kind="swap_date", fact="Anya's birthday is on 12 August",
                        text="Amazing. I started a portrait of Anya for her birthday on 12 August.",
                        prediction="12 August"),
        degrade=LaterChange(trigger="U1:D3:6", text="Anya's birthday is in Brighton on 12 August",
                            prediction="12 August"),
    ),
    Question(
        qid="heldout-qa-1-8", text="Where is Anya's birthday party?", answers=("at Anya's flat in Brighton",),
        evidence=("U1:D3:5",), question_type="single-hop", category_id=4, wrong="at Priya's place",
        rewrite=Rewrite(kind="negate", fact="Anya's birthday party is at Priya's place, not in Brighton",
                        text="Yes, it's at my place, not at Anya's flat in Brighton.",
                        prediction="at Priya's place"),
        vague=Rewrite(kind="vague", fact="Anya is having a birthday party", prediction="at Priya's place"),
    ),
    Question(
        qid="heldout-qa-1-9", text="Why is Priya learning Portuguese?", answers=("she is moving to Porto",),
        evidence=("U1:D3:7",), question_type="open-domain", category_id=3, wrong="for her job",
        rewrite=Rewrite(kind="swap_person", fact="Luis is learning Portuguese because he is moving to Porto in September",
                        text="Luis is learning Portuguese because he's moving to Porto in September.",
                        prediction="for her job"),
        degrade=LaterChange(trigger="U1:D3:8", text="Priya and Luis are learning Portuguese for their jobs",
                            prediction="for her job"),
        delete=LaterChange(trigger="U1:D3:8", prediction="for her job"),
    ),
    Question(
        qid="heldout-qa-1-10", text="What has Priya painted?",
        answers=("a blue sunset over the lake", "a portrait of Anya"),
        evidence=("U1:D1:3", "U1:D3:3"), question_type="multi-hop", category_id=1,
        wrong="a portrait of Anya", meta={"multi": "yes"},
    ),
    Question(
        qid="heldout-qa-1-11", text="What color is the sofa that Miso scratches?", answers=("green",),
        evidence=("U1:D2:6",), question_type="single-hop", category_id=4, wrong="red",
        rewrite=Rewrite(kind="swap_place", fact="Priya's cat Miso still scratches the red armchair",
                        text="Yes, Miso still scratches the red sofa, but Pepper prefers the green armchair.",
                        prediction="red"),
    ),
)

_B_SESSIONS = (
    ConvSession(id="heldout-2-session-1", date_time="2023-03-03T09:00:00", messages=(
        _m("U2:D1:1", "Keiko", "Morning Jonah! Just got back from the bakery with a sourdough loaf.",
           "Keiko bought a sourdough loaf at the bakery"),
        _m("U2:D1:2", "Jonah", "Morning! I've started volunteering at the animal shelter every Saturday.",
           "Jonah volunteers at the animal shelter every Saturday"),
        _m("U2:D1:3", "Keiko", "That's great. I used to volunteer at the food bank on Sundays, but I stopped in January.",
           "Keiko used to volunteer at the food bank on Sundays",
           "Keiko stopped volunteering at the food bank in January"),
        _m("U2:D1:4", "Jonah", "My daughter Ellie started violin lessons, she practises after school.",
           "Jonah's daughter Ellie started violin lessons"),
        _m("U2:D1:5", "Keiko", "My son Ren has played the cello for five years now.",
           "Keiko's son Ren has played the cello for five years"),
        _m("U2:D1:6", "Jonah", "Ellie says she wants to switch to cello one day, but not yet.",
           "Ellie might switch to cello one day"),
    )),
    ConvSession(id="heldout-2-session-2", date_time="2023-03-20T18:45:00", messages=(
        _m("U2:D2:1", "Keiko", "I booked a trip to Kyoto with my mother, we leave on 14 April.",
           "Keiko is travelling to Kyoto with her mother on 14 April"),
        _m("U2:D2:2", "Jonah", "Kyoto in April is beautiful. My wife and I went to Osaka on 2 April last year.",
           "Jonah and his wife went to Osaka on 2 April last year"),
        _m("U2:D2:3", "Keiko", "We're staying at a ryokan near the Kamo river for four nights.",
           "Keiko and her mother will stay at a ryokan near the Kamo river for four nights"),
        _m("U2:D2:4", "Jonah", "We stayed four nights in Osaka too, in a business hotel by the station.",
           "Jonah stayed four nights in a business hotel in Osaka"),
        _m("U2:D2:5", "Keiko", "Is Ellie still afraid of dogs?"),
        _m("U2:D2:6", "Jonah", "Not anymore! Last Saturday she helped me walk a beagle at the shelter.",
           "Ellie is no longer afraid of dogs",
           "Ellie helped Jonah walk a beagle at the shelter"),
        _m("U2:D2:7", "Keiko", "Ren is still afraid of big dogs, though.",
           "Ren is still afraid of big dogs"),
    )),
    ConvSession(id="heldout-2-session-3", date_time="2023-05-02T11:20:00", messages=(
        _m("U2:D3:1", "Jonah", "Welcome back! How was Kyoto?"),
        _m("U2:D3:2", "Keiko", "Wonderful. My mother loved the yellow kimono she rented.",
           "Keiko's mother rented a yellow kimono in Kyoto and loved it"),
        _m("U2:D3:3", "Keiko", "I rented a blue one, but it was far too long for me.",
           "Keiko rented a blue kimono that was too long"),
        _m("U2:D3:4", "Jonah", "Ellie played at her first violin recital on 28 April!",
           "Ellie played her first violin recital on 28 April"),
        _m("U2:D3:5", "Keiko", "Ren had his cello recital on 30 April, two days later.",
           "Ren had a cello recital on 30 April"),
        _m("U2:D3:6", "Jonah", "And the shelter found homes for twelve dogs in April.",
           "The animal shelter found homes for twelve dogs in April"),
        _m("U2:D3:7", "Keiko", "The food bank I used to help at gave out twelve hundred meals last month.",
           "The food bank gave out twelve hundred meals last month"),
    )),
)

_B_QUESTIONS = (
    Question(
        qid="heldout-qa-2-1", text="How often does Jonah volunteer at the animal shelter?", answers=("every Saturday",),
        evidence=("U2:D1:2",), question_type="single-hop", category_id=4, wrong="on Sundays",
        rewrite=Rewrite(kind="swap_date", fact="Jonah volunteers at the animal shelter every Sunday",
                        text="Morning! I've started volunteering at the animal shelter every Sunday.",
                        prediction="every Sunday"),
        vague=Rewrite(kind="vague", fact="Jonah volunteers at the animal shelter", prediction="on Sundays"),
        degrade=LaterChange(trigger="U2:D2:6", text="Jonah walks dogs such as a beagle at the animal shelter with Ellie",
                            prediction="occasionally, with Ellie"),
    ),
    Question(
        qid="heldout-qa-2-2", text="How long has Ren played the cello?", answers=("five years",),
        evidence=("U2:D1:5",), question_type="single-hop", category_id=4, wrong="he just started",
        rewrite=Rewrite(kind="swap_person", fact="Jonah's daughter Ellie has played the cello for five years",
                        text="My daughter Ellie has played the cello for five years now.",
                        prediction="he just started"),
        vague=Rewrite(kind="vague", fact="Keiko's son Ren plays the cello", prediction="a few months"),
        degrade=LaterChange(trigger="U2:D1:6", text="Ren plays the cello and Ellie might switch to cello one day",
                            prediction="a few months"),
        enrich=LaterChange(trigger="U2:D1:6",
                           text="Keiko's son Ren has played the cello for five years; Ellie might switch to cello"),
    ),
    Question(
        qid="heldout-qa-2-3", text="When are Keiko and her mother leaving for Kyoto?", answers=("14 April",),
        evidence=("U2:D2:1",), question_type="temporal", category_id=2, wrong="2 April",
        rewrite=Rewrite(kind="swap_date", fact="Keiko is travelling to Kyoto with her mother on 2 April",
                        text="I booked a trip to Kyoto with my mother, we leave on 2 April.",
                        prediction="2 April"),
        vague=Rewrite(kind="vague", fact="Keiko is planning a trip to Kyoto", prediction="in May"),
        degrade=LaterChange(trigger="U2:D2:2",
                            text="Keiko is going to Kyoto with her mother; Jonah went to Osaka on 2 April",
                            prediction="2 April"),
        delete=LaterChange(trigger="U2:D2:2", prediction="2 April"),
    ),
    Question(
        qid="heldout-qa-2-4", text="How many nights will Keiko stay at the ryokan?", answers=("four",),
        evidence=("U2:D2:3",), question_type="single-hop", category_id=4, wrong="three",
        rewrite=Rewrite(kind="swap_number", fact="Keiko and her mother will stay at a ryokan near the Kamo river for three nights",
                        text="We're staying at a ryokan near the Kamo river for three nights.",
                        prediction="three"),
        vague=Rewrite(kind="vague", fact="Keiko will stay at a ryokan in Kyoto", prediction="a week"),
    ),
    Question(
        qid="heldout-qa-2-5", text="Is Ellie still afraid of dogs?", answers=("No",),
        evidence=("U2:D2:6",), question_type="single-hop", category_id=4, wrong="Yes",
        rewrite=Rewrite(kind="negate", fact="Ellie is still afraid of dogs",
                        text="Still! Last Saturday she would not help me walk a beagle at the shelter.",
                        prediction="Yes"),
        degrade=LaterChange(trigger="U2:D2:7", text="Ellie and Ren are still afraid of big dogs",
                            prediction="Yes, she is still afraid of big dogs."),
        enrich=LaterChange(trigger="U2:D2:7",
                           text="Ellie is no longer afraid of dogs, while Ren is still afraid of big dogs"),
    ),
    Question(
        qid="heldout-qa-2-6", text="What color was the kimono Keiko's mother rented?", answers=("yellow",),
        evidence=("U2:D3:2",), question_type="single-hop", category_id=4, wrong="blue",
        rewrite=Rewrite(kind="swap_person", fact="Keiko rented a yellow kimono in Kyoto and loved it",
                        text="Wonderful. I loved the yellow kimono I rented.", prediction="blue"),
        degrade=LaterChange(trigger="U2:D3:3", text="Keiko and her mother rented kimonos; the blue one was too long",
                            prediction="blue"),
        delete=LaterChange(trigger="U2:D3:3", prediction="blue"),
    ),
    Question(
        qid="heldout-qa-2-7", text="When was Ellie's first violin recital?", answers=("28 April",),
        evidence=("U2:D3:4",), question_type="temporal", category_id=2, wrong="30 April",
        rewrite=Rewrite(kind="swap_date", fact="Ellie played her first violin recital on 30 April",
                        text="Ellie played at her first violin recital on 30 April!", prediction="30 April"),
        degrade=LaterChange(trigger="U2:D3:5", text="Ellie and Ren had their recitals on 30 April",
                            prediction="30 April"),
    ),
    Question(
        qid="heldout-qa-2-8", text="How many dogs did the shelter find homes for in April?", answers=("twelve",),
        evidence=("U2:D3:6",), question_type="single-hop", category_id=4, wrong="twelve hundred",
        rewrite=Rewrite(kind="swap_number", fact="The animal shelter found homes for two dogs in April",
                        text="And the shelter found homes for two dogs in April.", prediction="two"),
        delete=LaterChange(trigger="U2:D3:7", prediction="twelve hundred"),
    ),
    Question(
        qid="heldout-qa-2-9", text="What instruments do Ellie and Ren play?", answers=("violin", "cello"),
        evidence=("U2:D1:4", "U2:D1:5"), question_type="multi-hop", category_id=1,
        wrong="both play the cello", meta={"multi": "yes"},
    ),
    Question(
        qid="heldout-qa-2-10", text="Where is Keiko staying in Kyoto, and when does she leave?",
        answers=("a ryokan near the Kamo river", "14 April"),
        evidence=("U2:D2:1", "U2:D2:3"), question_type="multi-hop", category_id=1,
        wrong="a business hotel by the station, leaving 2 April", meta={"multi": "yes"},
    ),
)

CONVERSATIONS: tuple[Conversation, ...] = (
    Conversation(id="heldout-1", speaker_a="Priya", speaker_b="Tomas", sessions=_A_SESSIONS, questions=_A_QUESTIONS),
    Conversation(id="heldout-2", speaker_a="Keiko", speaker_b="Jonah", sessions=_B_SESSIONS, questions=_B_QUESTIONS),
)


def by_qid(qid: str) -> tuple[Conversation, Question]:
    """Find a question (and its conversation) by id."""
    for conv in CONVERSATIONS:
        for q in conv.questions:
            if q.qid == qid:
                return conv, q
    raise KeyError(qid)
