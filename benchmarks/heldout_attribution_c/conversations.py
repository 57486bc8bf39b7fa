"""Three hand-written two-speaker conversations with their questions.

Every message carries the facts a careful extractor would write down for it (third person,
names resolved, relative dates kept as said). A question names its evidence as
``(message index, key phrase)`` pairs: the key phrase appears verbatim in the message and in
one of its facts, so "the fact reached a memory unit / the context" is a substring check on a
phrase chosen when the question was written, never a similarity score.

``swap`` rewrites one key phrase so that most words survive but the meaning does not
(negation, another person or relation, another number/date/place, the other speaker, an
antonym); ``swap_pred`` is what a model reading the rewritten fact would answer. ``vague`` is
a partial summary of the same fact that loses the key phrase.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Message:
    speaker: str
    text: str
    facts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Question:
    qid: int
    question: str
    answers: tuple[str, ...]
    evidence: tuple[tuple, ...]  # (global message index, key phrase in the fact[, key phrase in the message])
    question_type: str
    wrong: str  # a plausible wrong answer led by a look-alike message
    swap: tuple[str, str, str] | None = None  # (old phrase, new phrase, style)
    swap_pred: str = ""
    vague: str = ""  # a partial summary of the key fact that drops the key phrase

    def keys(self) -> list[tuple[int, str, str]]:
        """(message index, key in the fact, key in the raw message) per evidence."""
        return [(e[0], e[1], e[2] if len(e) > 2 else e[1]) for e in self.evidence]


@dataclass(frozen=True)
class Conversation:
    index: int
    speaker_a: str
    speaker_b: str
    sessions: tuple[tuple[str, tuple[Message, ...]], ...]  # (LoCoMo date string, messages)
    questions: tuple[Question, ...] = field(default_factory=tuple)

    def messages(self) -> list[tuple[int, int, Message]]:
        """(session number from 1, position in the session from 1, message) in order."""
        out = []
        for s, (_, msgs) in enumerate(self.sessions, start=1):
            for i, m in enumerate(msgs, start=1):
                out.append((s, i, m))
        return out


M = Message

JOB_AND_HOUSE = Conversation(
    index=31,
    speaker_a="Nadia",
    speaker_b="Felix",
    sessions=(
        ("10:05 am on 4 March, 2024", (
            M("Nadia", "Felix! Big news, I handed in my notice at St. Aidan's pharmacy last Friday.",
              ("Nadia handed in her notice at St. Aidan's pharmacy last Friday",)),
            M("Felix", "No way! After six years? Where are you off to?",),
            M("Nadia", "I'm starting at Corvel Biotech in Leeds as a quality analyst. My brother Omar works at Harlow Labs in Sheffield and he kept telling me to try industry.",
              ("Nadia is starting at Corvel Biotech in Leeds as a quality analyst",
               "Nadia's brother Omar works at Harlow Labs in Sheffield")),
            M("Felix", "That's brilliant. Did St. Aidan's try to keep you?",),
            M("Nadia", "I turned down a raise they offered me to stay. It wasn't about the money.",
              ("Nadia turned down a raise St. Aidan's offered her to stay",)),
            M("Felix", "Good for you. I've got news too, we finally had an offer accepted on a house in Hebden Bridge!",
              ("Felix had an offer accepted on a house in Hebden Bridge",)),
            M("Nadia", "Hebden Bridge! I thought you were looking in Todmorden?",),
            M("Felix", "We viewed one in Todmorden but the roof leaked. The Hebden Bridge one has three bedrooms, our old flat only had two.",
              ("Felix viewed a house in Todmorden but its roof leaked",
               "Felix's new house in Hebden Bridge has three bedrooms",
               "Felix's old flat had two bedrooms")),
        )),
        ("7:40 pm on 18 March, 2024", (
            M("Felix", "Packing is chaos. My cousin Bram is lending us his van for the move.",
              ("Felix's cousin Bram is lending him his van for the move",)),
            M("Nadia", "Nice of him. Omar helped me paint my flat last weekend so I can sell it later.",
              ("Nadia's brother Omar helped her paint her flat last weekend",)),
            M("Felix", "You're selling too? Everyone is moving this year.",),
            M("Nadia", "Maybe in summer. The commute to Leeds is an hour each way, I disliked it already on the trial day.",
              ("Nadia's commute to Leeds is an hour each way",
               "Nadia disliked the commute on her trial day")),
            M("Felix", "Ouch. Anyway, first big purchase for the new place: a green sofa from the market in Halifax.",
              ("Felix bought a green sofa from the market in Halifax for the new house",)),
            M("Nadia", "Green! Bold. When do you get the keys?",),
            M("Felix", "Completion should be next week, fingers crossed.",),
        )),
        ("1:20 pm on 2 April, 2024", (
            M("Felix", "We're in! I got the keys last Wednesday and Bram drove the van up the hill twice.",
              ("Felix got the keys to his new house last Wednesday",
               "Bram drove the van up the hill twice")),
            M("Nadia", "Congratulations! And Corvel is great, I loved the first week, the lab team is lovely.",
              ("Nadia loved the first week at Corvel Biotech",)),
            M("Felix", "Ha, I was about to ask. Glad it's good. Who's your manager?",),
            M("Nadia", "A woman called Hanne Sørensen. She used to run the lab at Harlow, where Omar is.",
              ("Nadia's manager at Corvel Biotech is Hanne Sørensen",
               "Hanne Sørensen used to run the lab at Harlow Labs")),
            M("Felix", "Small world. We also bought a washing machine, the old one stayed with the flat.",
              ("Felix bought a washing machine for the new house",)),
            M("Nadia", "Practical! Did you keep the green sofa idea?",),
            M("Felix", "It's in the living room already and the cat has claimed it.",),
        )),
        ("6:55 pm on 21 April, 2024", (
            M("Nadia", "How's Hebden Bridge treating you?",),
            M("Felix", "Loving it. My mum gave us a lemon tree as a housewarming present, it's on the kitchen windowsill.",
              ("Felix's mum gave him a lemon tree as a housewarming present",)),
            M("Nadia", "That's sweet. I'm thinking of going down to four days a week at Corvel from June.",
              ("Nadia is thinking of working four days a week at Corvel Biotech from June",)),
            M("Felix", "Would they let you?",),
            M("Nadia", "Hanne said yes as long as I'm in the lab on Tuesdays.",
              ("Hanne agreed to Nadia working four days as long as she is in the lab on Tuesdays",)),
            M("Felix", "Perfect. Come and visit, the spare room is ready.",),
        )),
    ),
    questions=(
        Question(1, "When did Nadia hand in her notice at the pharmacy?", ("The Friday before 4 March 2024",),
                 ((0, "last Friday"),), "temporal", "Last weekend, before 18 March 2024",
                 ("last Friday", "last weekend", "date"), "The weekend before 18 March 2024",
                 "Nadia handed in her notice at St. Aidan's pharmacy"),
        Question(2, "Which company is Nadia joining?", ("Corvel Biotech",), ((2, "Corvel Biotech"),),
                 "single-hop", "Harlow Labs", ("Corvel Biotech", "Harlow Labs", "place"), "Harlow Labs",
                 "Nadia is starting a new job in Leeds as a quality analyst"),
        Question(3, "Did Nadia accept the raise St. Aidan's offered her?", ("No",),
                 ((4, "turned down a raise"),), "single-hop", "Yes",
                 ("turned down a raise", "accepted a raise", "negation"), "Yes, she accepted it",
                 "Nadia talked with St. Aidan's about a raise"),
        Question(4, "How many bedrooms does Felix's new house have?", ("Three",), ((7, "has three bedrooms"),),
                 "single-hop", "Two", ("has three bedrooms", "has two bedrooms", "number"), "Two",
                 "Felix's new house in Hebden Bridge is bigger than the flat"),
        Question(5, "Where is Felix's new house?", ("Hebden Bridge",), ((5, "in Hebden Bridge"),),
                 "single-hop", "Todmorden", ("in Hebden Bridge", "in Todmorden", "place"), "Todmorden",
                 "Felix had an offer accepted on a house"),
        Question(6, "Who lent Felix a van for the move?", ("His cousin Bram",), ((8, "cousin Bram"),),
                 "single-hop", "Nadia's brother Omar", ("cousin Bram", "brother Omar", "person"),
                 "His brother Omar", "Felix's family is lending him a van for the move"),
        Question(7, "What did Felix get for his new house?",
                 ("a green sofa, a washing machine and a lemon tree",),
                 ((12, "green sofa"), (19, "washing machine"), (23, "lemon tree")), "multi-hop",
                 "a green sofa and a washing machine", None, "", ""),
        Question(8, "When did Felix get the keys to his new house?", ("The Wednesday before 2 April 2024",),
                 ((15, "last Wednesday"),), "temporal", "Next week after 18 March 2024",
                 ("last Wednesday", "next Wednesday", "date"), "The Wednesday after 2 April 2024",
                 "Felix got the keys to his new house"),
        Question(9, "How did Nadia feel about her first week at Corvel Biotech?", ("She loved it",),
                 ((16, "loved the first week"),), "single-hop", "She disliked it",
                 ("loved the first week", "disliked the first week", "antonym"), "She disliked it",
                 "Nadia finished her first week at Corvel Biotech"),
        Question(10, "Who is Nadia's manager at Corvel Biotech?", ("Hanne Sørensen",),
                 ((18, "Nadia's manager at Corvel Biotech is Hanne Sørensen", "Hanne Sørensen"),), "single-hop", "Omar",
                 ("Nadia's manager at Corvel Biotech is Hanne Sørensen", "Felix's manager at Corvel Biotech is Hanne Sørensen",
                  "speaker"), "Nadia's manager is not mentioned; Hanne Sørensen manages Felix",
                 "Nadia has a new manager at Corvel Biotech"),
    ),
)

BAND_AND_GARDEN = Conversation(
    index=32,
    speaker_a="Jonah",
    speaker_b="Maren",
    sessions=(
        ("8:30 pm on 9 May, 2024", (
            M("Maren", "Jonah, how did rehearsal go? Still in Pia's garage?",),
            M("Jonah", "Not any more, we moved to the church hall on Elm Street because the neighbours complained about the noise at Pia's garage.",
              ("Jonah's band moved rehearsals to the church hall on Elm Street",
               "Jonah's band used to rehearse in Pia's garage")),
            M("Maren", "Ha, fair. Are you still on bass?",),
            M("Jonah", "Yes, I play bass guitar in the Low Tides. I played trumpet at school but I'm terrible now.",
              ("Jonah plays bass guitar in the Low Tides",
               "Jonah played trumpet at school")),
            M("Maren", "I finally got an allotment plot! I planted tomatoes on the first day.",
              ("Maren got an allotment plot", "Maren planted tomatoes at her allotment")),
            M("Jonah", "Amazing. Is it the one behind the station?",),
            M("Maren", "Yes, plot 14. My neighbour Mr. Okafor gave me his old greenhouse, and my aunt Liesel sent seeds from Bremen.",
              ("Maren's allotment is plot 14 behind the station",
               "Maren's neighbour Mr. Okafor gave her his old greenhouse",
               "Maren's aunt Liesel sent her seeds from Bremen")),
            M("Jonah", "We've got a gig at the Crown & Anchor in ten days, come if you can.",
              ("Jonah's band has a gig at the Crown & Anchor in ten days",)),
        )),
        ("5:10 pm on 25 May, 2024", (
            M("Maren", "Sorry I missed the gig! How was it?",),
            M("Jonah", "Packed, about 80 people came. The one before only had 30, and the room holds 120.",
              ("About 80 people came to the Low Tides' gig at the Crown & Anchor",
               "The Low Tides' previous gig had 30 people")),
            M("Maren", "That's huge for you guys. Did you play anything new?",),
            M("Jonah", "We played 'Salt Lines', a song I wrote in March. Pia wrote 'Harbour Glass' which closed the set.",
              ("Jonah wrote the song 'Salt Lines' in March",
               "Pia wrote the song 'Harbour Glass'")),
            M("Maren", "Were you nervous?",),
            M("Jonah", "Honestly I felt confident playing it live, we'd rehearsed it to death.",
              ("Jonah felt confident playing 'Salt Lines' live",)),
            M("Maren", "Garden update: the runner beans are in, along the back fence.",
              ("Maren planted runner beans at her allotment",)),
            M("Jonah", "Slugs got to ours last year, watch out.",),
            M("Maren", "Mr. Okafor swears by beer traps. He grows leeks on plot 15.",
              ("Mr. Okafor grows leeks on plot 15",)),
        )),
        ("11:45 am on 8 June, 2024", (
            M("Jonah", "Big news: we are recording an EP in July at a studio in Margate.",
              ("The Low Tides are recording an EP in July at a studio in Margate",)),
            M("Maren", "That's fantastic! Is a label paying for it?",),
            M("Jonah", "No, we're paying ourselves, Halfmoon Records passed on us.",
              ("Halfmoon Records passed on the Low Tides", "The Low Tides are paying for the EP themselves")),
            M("Maren", "Their loss. I put courgettes in last weekend, the last gap on the plot is filled.",
              ("Maren planted courgettes at her allotment last weekend",)),
            M("Jonah", "So tomatoes, beans and now courgettes? You'll be feeding the street.",),
            M("Maren", "That's the plan. Mr. Okafor's greenhouse needs a new pane of glass though.",
              ("Mr. Okafor's old greenhouse needs a new pane of glass",)),
            M("Jonah", "Pia's dad is a glazier, I'll ask him.",
              ("Pia's dad is a glazier",)),
            M("Maren", "You're a star. Send me the EP when it's done!",),
        )),
    ),
    questions=(
        Question(1, "What instrument does Jonah play in the Low Tides?", ("Bass guitar",),
                 ((3, "bass guitar"),), "single-hop", "Trumpet", ("bass guitar", "trumpet", "thing"),
                 "Trumpet", "Jonah plays in the Low Tides"),
        Question(2, "Where does Jonah's band rehearse now?", ("The church hall on Elm Street",),
                 ((1, "church hall on Elm Street"),), "single-hop", "Pia's garage",
                 ("church hall on Elm Street", "church hall on Mill Street", "place"), "A church hall on Mill Street",
                 "Jonah's band moved rehearsals"),
        Question(3, "What has Maren planted at her allotment?", ("tomatoes, runner beans and courgettes",),
                 ((4, "tomatoes"), (14, "runner beans"), (20, "courgettes")), "multi-hop",
                 "tomatoes and runner beans", None, "", ""),
        Question(4, "Who gave Maren a greenhouse?", ("Her neighbour Mr. Okafor",),
                 ((6, "neighbour Mr. Okafor gave"),), "single-hop", "Her aunt Liesel",
                 ("neighbour Mr. Okafor gave", "aunt Liesel gave", "person"), "Her aunt Liesel",
                 "Maren was given an old greenhouse"),
        Question(5, "How many people came to the Low Tides' gig at the Crown & Anchor?", ("About 80",),
                 ((9, "80 people"),), "single-hop", "About 30",
                 ("80 people", "120 people", "number"), "About 120",
                 "The Low Tides' gig at the Crown & Anchor was busy"),
        Question(6, "Who wrote 'Salt Lines'?", ("Jonah",), ((11, "Jonah wrote the song 'Salt Lines'", "'Salt Lines', a song I wrote"),),
                 "single-hop", "Pia", ("Jonah wrote the song 'Salt Lines'", "Maren wrote the song 'Salt Lines'", "speaker"),
                 "Maren", "The Low Tides played 'Salt Lines'"),
        Question(7, "How did Jonah feel about playing 'Salt Lines' live?", ("Confident",),
                 ((13, "felt confident"),), "single-hop", "Nervous",
                 ("felt confident", "felt nervous", "antonym"), "Nervous",
                 "Jonah played 'Salt Lines' live"),
        Question(8, "Are the Low Tides recording an EP?", ("Yes, in July in Margate",),
                 ((17, "are recording an EP"),), "single-hop", "No, Halfmoon Records passed on them",
                 ("are recording an EP", "are not recording an EP", "negation"), "No",
                 "The Low Tides talked about a studio in Margate"),
        Question(9, "When is the Low Tides' gig at the Crown & Anchor?", ("19 May 2024",),
                 ((7, "in ten days"),), "temporal", "25 May 2024",
                 ("in ten days", "in two days", "date"), "11 May 2024",
                 "Jonah's band has a gig at the Crown & Anchor"),
    ),
)

ILLNESS_AND_WEDDING = Conversation(
    index=33,
    speaker_a="Ayesha",
    speaker_b="Lucas",
    sessions=(
        ("3:00 pm on 14 August, 2024", (
            M("Lucas", "Hey Ayesha, how is your Nani doing?",),
            M("Ayesha", "She had her hip replacement last Monday. My grandfather had cataract surgery last year, so the hospital knows us well.",
              ("Ayesha's grandmother had a hip replacement last Monday",
               "Ayesha's grandfather had cataract surgery last year")),
            M("Lucas", "Oh no, how is she coping?",),
            M("Ayesha", "Better than expected. She came home after five days, not the two weeks they warned us about.",
              ("Ayesha's grandmother came home from hospital after five days",)),
            M("Lucas", "That's a relief. My cousin Marta is getting married in Porto, I just got the invitation.",
              ("Lucas's cousin Marta is getting married in Porto",)),
            M("Ayesha", "Porto! Isn't her sister the one who got married in Braga?",),
            M("Lucas", "Yes, Inês got married in Braga two years ago. Marta wants something bigger.",
              ("Lucas's cousin Inês got married in Braga two years ago",)),
        )),
        ("9:15 pm on 29 August, 2024", (
            M("Ayesha", "Nani can't manage the stairs yet, so we moved her bed downstairs.",
              ("Ayesha's grandmother can't manage the stairs yet",)),
            M("Lucas", "Who's with her during the day?",),
            M("Ayesha", "My uncle Farid looks after her during the day, and my mum comes in the evenings.",
              ("Ayesha's uncle Farid looks after her grandmother during the day",
               "Ayesha's mum visits her grandmother in the evenings")),
            M("Lucas", "Good that the family is sharing it.",),
            M("Ayesha", "When is Marta's wedding, by the way?",),
            M("Lucas", "It's on the 28th of next month. They've invited 120 guests, they first planned 200.",
              ("Marta's wedding is on the 28th of next month", "Marta invited 120 guests to her wedding",
               "Marta first planned 200 guests")),
            M("Ayesha", "Still huge. Are you doing anything for it?",),
            M("Lucas", "I'm in charge of the rings. Marta trusts me more than her brother Tiago, apparently.",
              ("Lucas is in charge of the rings for Marta's wedding",)),
        )),
        ("4:40 pm on 15 September, 2024", (
            M("Ayesha", "Nani started physiotherapy this week and she enjoyed her physiotherapy, which nobody expected.",
              ("Ayesha's grandmother enjoyed her physiotherapy",)),
            M("Lucas", "That's great news. Mine dreaded every session after his knee.",
              ("Lucas's grandfather dreaded his physiotherapy after his knee operation",)),
            M("Ayesha", "How are the wedding jobs going?",),
            M("Lucas", "Marta added another one: I have to book the bus from the church to the reception.",
              ("Lucas has to book the bus from the church to the reception",)),
            M("Ayesha", "Busy best cousin.",),
            M("Lucas", "And Tiago is sorting the music, thank goodness, not me.",
              ("Tiago is sorting the music for Marta's wedding",)),
        )),
        ("10:30 am on 6 October, 2024", (
            M("Lucas", "Back from Porto! It was beautiful.",),
            M("Ayesha", "How did your speech go?",),
            M("Lucas", "Oh right, I forgot to tell you, I also gave a short speech at the dinner. People laughed in the right places.",
              ("Lucas gave a short speech at Marta's wedding dinner",)),
            M("Ayesha", "Ha! Nani walked to the corner shop with her frame yesterday.",
              ("Ayesha's grandmother walked to the corner shop with her frame",)),
            M("Lucas", "That's brilliant progress. Give her my love.",),
        )),
    ),
    questions=(
        Question(1, "What operation did Ayesha's grandmother have?", ("A hip replacement",),
                 ((1, "hip replacement"),), "single-hop", "Cataract surgery",
                 ("hip replacement", "cataract surgery", "thing"), "Cataract surgery",
                 "Ayesha's grandmother had an operation"),
        Question(2, "When did Ayesha's grandmother have her hip replacement?", ("The Monday before 14 August 2024",),
                 ((1, "last Monday"),), "temporal", "Last year",
                 ("last Monday", "last year", "date"), "Last year",
                 "Ayesha's grandmother had a hip replacement"),
        Question(3, "Where is Lucas's cousin Marta getting married?", ("Porto",), ((4, "married in Porto"),),
                 "single-hop", "Braga", ("married in Porto", "married in Braga", "place"), "Braga",
                 "Lucas's cousin Marta is getting married"),
        Question(4, "Can Ayesha's grandmother climb the stairs yet?", ("No",),
                 ((7, "can't manage the stairs"),), "single-hop", "Yes",
                 ("can't manage the stairs", "can manage the stairs", "negation"), "Yes",
                 "Ayesha's grandmother is recovering at home"),
        Question(5, "Who looks after Ayesha's grandmother during the day?", ("Her uncle Farid",),
                 ((9, "uncle Farid"),), "single-hop", "Her mum",
                 ("uncle Farid", "cousin Tiago", "person"), "Her cousin Tiago",
                 "Ayesha's family looks after her grandmother"),
        Question(6, "How many guests are invited to Marta's wedding?", ("120",),
                 ((12, "invited 120 guests"),), "single-hop", "200",
                 ("invited 120 guests", "invited 200 guests", "number"), "200",
                 "Marta cut down her guest list"),
        Question(7, "What jobs did Lucas have for Marta's wedding?",
                 ("the rings, booking the bus from the church and a speech at the dinner",),
                 ((14, "in charge of the rings"), (18, "book the bus"), (23, "short speech")), "multi-hop",
                 "the rings and the music", None, "", ""),
        Question(8, "How did Ayesha's grandmother feel about physiotherapy?", ("She enjoyed it",),
                 ((15, "enjoyed her physiotherapy"),), "single-hop", "She dreaded it",
                 ("enjoyed her physiotherapy", "dreaded her physiotherapy", "antonym"), "She dreaded it",
                 "Ayesha's grandmother started physiotherapy"),
        Question(9, "When is Marta's wedding?", ("28 September 2024",),
                 ((12, "28th of next month"),), "temporal", "28 August 2024",
                 ("28th of next month", "28th of this month", "date"), "28 August 2024",
                 "Marta's wedding date was set"),
    ),
)

CONVERSATIONS: tuple[Conversation, ...] = (JOB_AND_HOUSE, BAND_AND_GARDEN, ILLNESS_AND_WEDDING)
