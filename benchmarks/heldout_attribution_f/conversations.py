"""Three hand-written two-speaker conversations in the LoCoMo shape, with their questions.

Each message carries the facts a careful extractor would write down (third person, absolute
dates), the short topic an episode title would use, and whether it opens a new episode. Each
question lists the *pieces* of information its answer needs: which message states it, which fact
carries it, and the literals (`value` in the fact, `msg_value` in the raw message) that must sit in
one sentence or message block of the answering context together with `who`. The neighbours are
deliberate: both speakers do similar things on other dates, with other numbers and places.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class Fact:
    key: str
    text: str
    replaces: str | None = None
    """Key of an earlier fact this one supersedes (a legitimate Mem0 UPDATE)."""
    retires: str | None = None
    """Key of an earlier fact this one makes obsolete (a legitimate Mem0 DELETE, besides the ADD)."""


@dataclass(frozen=True)
class Msg:
    dia: str
    speaker: str
    text: str
    facts: tuple[Fact, ...] = ()
    topic: str = ""
    new_episode: bool = False


@dataclass(frozen=True)
class Session:
    date_time: str
    messages: tuple[Msg, ...]

    @property
    def when(self) -> datetime:
        return datetime.strptime(self.date_time, "%I:%M %p on %d %B, %Y")


@dataclass(frozen=True)
class Piece:
    msg: str
    fact: str
    who: str
    value: str
    msg_value: str | None = None
    also: tuple[str, ...] = ()
    relative: bool = False
    """The message states the time relative to the session date (the block's timestamp counts)."""
    swap: str | None = None
    msg_swap: str | None = None
    vague: str | None = None
    negation: tuple[str, str] | None = None
    """(phrase, negated phrase) in the fact text."""

    @property
    def raw_value(self) -> str:
        return self.msg_value or self.value


@dataclass(frozen=True)
class Question:
    num: int
    text: str
    answer: str
    qtype: str
    pieces: tuple[Piece, ...]
    pred: str
    unknown: str
    confusion: tuple[str, ...] = ()
    confused: str | None = None
    slip: str | None = None
    """A wrong answer a model gives with every piece of evidence in front of it."""
    negated: str | None = None
    followups: tuple[str, ...] = ()

    @property
    def category_id(self) -> int:
        return {"multi-hop": 1, "temporal": 2, "open-domain": 3, "single-hop": 4}[self.qtype]


@dataclass(frozen=True)
class Conversation:
    sample: int
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...] = field(default=())

    @property
    def user_id(self) -> str:
        return f"locomo-{self.sample}"

    def message_id(self, dia: str) -> str:
        return f"U{self.sample}:{dia}"

    def messages(self) -> list[tuple[int, Msg]]:
        return [(i, m) for i, s in enumerate(self.sessions, start=1) for m in s.messages]

    def message(self, dia: str) -> Msg:
        return next(m for _, m in self.messages() if m.dia == dia)

    def session_of(self, dia: str) -> Session:
        return next(s for s in self.sessions if any(m.dia == dia for m in s.messages))

    def fact(self, key: str) -> Fact:
        return next(f for _, m in self.messages() for f in m.facts if f.key == key)

    def other(self, name: str) -> str:
        return self.speaker_b if name == self.speaker_a else self.speaker_a


def F(key: str, text: str, **kw) -> Fact:  # noqa: N802 - keeps the tables readable
    return Fact(key, text, **kw)


def M(dia: str, speaker: str, text: str, *facts: Fact, topic: str = "", new: bool = False) -> Msg:  # noqa: N802
    return Msg(dia, speaker, text, tuple(facts), topic, new)


BEES = Conversation(
    31, "Ines", "Marcus",
    (
        Session("1:14 pm on 9 March, 2024", (
            M("D1:1", "Ines", "Marcus! I finally got my beekeeping certificate from the Riverside Beekeepers "
              "Association yesterday.",
              F("ines_cert", "Ines received her beekeeping certificate from the Riverside Beekeepers Association "
                "on 8 March 2024."), topic="a new beekeeping certificate"),
            M("D1:2", "Marcus", "Congratulations! I did the same course at the Hillcrest club back in 2022. How many "
              "hives are you starting with?",
              F("marcus_course", "Marcus completed a beekeeping course at the Hillcrest club in 2022."),
              topic="beekeeping courses"),
            M("D1:3", "Ines", "Two hives for now, on my allotment, plot 14 at the Elm Street community garden.",
              F("ines_hives", "Ines is starting with two beehives on her allotment."),
              F("ines_plot", "Ines has allotment plot 14 at the Elm Street community garden."), topic="first hives"),
            M("D1:4", "Marcus", "Nice spot. I keep five hives on my uncle's farm near Tarrow.",
              F("marcus_hives", "Marcus keeps five beehives on his uncle's farm near Tarrow."), topic="first hives"),
            M("D1:5", "Ines", "My bees arrive on 23 March. I ordered Buckfast bees from a breeder in Wales.",
              F("ines_bees", "Ines ordered Buckfast bees from a breeder in Wales, arriving on 23 March 2024."),
              topic="ordering bees"),
            M("D1:6", "Marcus", "Buckfast are gentle. Mine are Carniolans from a supplier in Slovenia.",
              F("marcus_breed", "Marcus keeps Carniolan bees from a supplier in Slovenia."), topic="bee breeds"),
            M("D1:7", "Ines", "I'm planting lavender and borage around the hives so the bees have forage.",
              F("ines_plants", "Ines is planting lavender and borage around her hives for forage."),
              topic="planting forage", new=True),
            M("D1:8", "Marcus", "Good idea. And the Tarrow honey show is on 18 May this year, you should come along.",
              F("honey_show", "Marcus invited Ines to the Tarrow honey show on 18 May 2024."),
              topic="the Tarrow honey show"),
        )),
        Session("10:02 am on 14 April, 2024", (
            M("D2:1", "Marcus", "Bad news, Ines: one of my hives swarmed last Tuesday and I lost about half the "
              "colony.",
              F("marcus_swarm", "Marcus lost about half a colony when one of his hives swarmed on 9 April 2024."),
              topic="a swarm"),
            M("D2:2", "Ines", "Oh no! Mine are fine. I did my first inspection on 6 April and spotted the queen in "
              "both hives.",
              F("ines_inspection", "Ines did her first hive inspection on 6 April 2024 and spotted the queen in "
                "both hives."), topic="hive inspections"),
            M("D2:3", "Marcus", "Lucky you. Next week I'm going to split my strongest hive to make up a new colony.",
              F("marcus_split", "Marcus plans to split his strongest hive in the week after 14 April 2024 to make "
                "a new colony."), topic="splitting a hive"),
            M("D2:4", "Ines", "Other news: I'm now the treasurer of the Elm Street garden committee.",
              F("ines_treasurer", "Ines became treasurer of the Elm Street community garden committee."),
              topic="the garden committee", new=True),
            M("D2:5", "Marcus", "Ha, counting seed money! I left the Tarrow growers' committee last year, too many "
              "meetings.",
              F("marcus_left", "Marcus left the Tarrow growers' committee in 2023."), topic="committees"),
            M("D2:6", "Ines", "We're holding a plant sale on 4 May to raise money for a new rainwater tank.",
              F("plant_sale", "The Elm Street garden committee is holding a plant sale on 4 May 2024 to raise "
                "money for a rainwater tank."), topic="a plant sale"),
            M("D2:7", "Marcus", "I can donate tomato seedlings for it, I've got about 40 on my windowsill.",
              F("marcus_seedlings", "Marcus offered to donate about 40 tomato seedlings to the Elm Street plant "
                "sale."), topic="a plant sale"),
            M("D2:8", "Ines", "That would be amazing, thank you!"),
        )),
        Session("6:40 pm on 26 May, 2024", (
            M("D3:1", "Ines", "The plant sale raised 620 euros, enough for the rainwater tank! Your seedlings sold "
              "out first.",
              F("sale_raised", "The Elm Street plant sale raised 620 euros, enough for the rainwater tank."),
              topic="the plant sale result"),
            M("D3:2", "Marcus", "Brilliant! The honey show went well for me too, my dark heather honey took second "
              "place.",
              F("marcus_prize", "Marcus's dark heather honey won second place at the Tarrow honey show."),
              topic="the honey show", new=True),
            M("D3:3", "Ines", "Congratulations! I went but didn't enter anything, my first harvest was only on 19 May.",
              F("ines_harvest", "Ines did her first honey harvest on 19 May 2024."),
              F("ines_no_entry", "Ines went to the Tarrow honey show but did not enter any honey."),
              topic="the first harvest"),
            M("D3:4", "Marcus", "How much did you get?"),
            M("D3:5", "Ines", "14 jars from the two hives. You usually get far more, right?",
              F("ines_jars", "Ines harvested 14 jars of honey from her two hives."), topic="honey yields"),
            M("D3:6", "Marcus", "Normally around 30, but this spring only 9 jars because of the swarm.",
              F("marcus_jars", "Marcus harvested only 9 jars of honey this spring because of the swarm; he "
                "normally gets around 30."), topic="honey yields"),
            M("D3:7", "Ines", "I'm selling mine at the Saturday market in Dunmore, 7 euros a jar.",
              F("ines_price", "Ines sells her honey at the Saturday market in Dunmore for 7 euros a jar."),
              topic="selling honey", new=True),
            M("D3:8", "Marcus", "I sell at the Kellsbridge farm shop for 9 euros a jar. And the split worked, I have "
              "six colonies now.",
              F("marcus_price", "Marcus sells his honey at the Kellsbridge farm shop for 9 euros a jar."),
              F("marcus_six", "Marcus now keeps six bee colonies after a successful hive split.",
                replaces="marcus_hives"), topic="selling honey"),
            M("D3:9", "Ines", "Nice! I'm thinking about going to the beekeeping conference in Ghent in July.",
              F("ines_ghent", "Ines is planning to attend the beekeeping conference in Ghent in July 2024."),
              topic="a conference in Ghent"),
        )),
        Session("11:20 am on 16 June, 2024", (
            M("D4:1", "Ines", "Change of plan, I'm not going to the Ghent conference after all, the train tickets "
              "were too expensive.",
              F("ines_no_ghent", "Ines is not going to the beekeeping conference in Ghent because the train tickets "
                "were too expensive.", replaces="ines_ghent"), topic="a conference in Ghent"),
            M("D4:2", "Marcus", "Shame. I'm giving a talk on swarm prevention at the Tarrow library on 2 July.",
              F("marcus_talk", "Marcus is giving a talk on swarm prevention at the Tarrow library on 2 July 2024."),
              topic="a talk on swarm prevention", new=True),
            M("D4:3", "Ines", "I'll be there! I treated both hives for varroa mites on 12 June.",
              F("ines_varroa", "Ines treated both of her hives for varroa mites on 12 June 2024."),
              topic="varroa treatment"),
            M("D4:4", "Marcus", "Good timing. I treat mine in August, after the last harvest.",
              F("marcus_varroa", "Marcus treats his hives for varroa mites in August after the last harvest."),
              topic="varroa treatment"),
            M("D4:5", "Ines", "My niece Lola wants to help with the next inspection, she's 11.",
              F("ines_niece", "Ines's niece Lola, who is 11, wants to help with the next hive inspection."),
              topic="young helpers", new=True),
            M("D4:6", "Marcus", "Get her a small bee suit. My nephew Theo loved it when he was 8.",
              F("marcus_nephew", "Marcus's nephew Theo enjoyed helping with the bees when he was 8."),
              topic="young helpers"),
            M("D4:7", "Ines", "Will do. See you at the library talk!"),
        )),
    ),
)

_INES_JARS = Piece("D3:5", "ines_jars", "Ines", "14 jars", swap="9 jars", vague="a small batch of jars")
_MARCUS_JARS = Piece("D3:6", "marcus_jars", "Marcus", "9 jars", swap="30 jars", vague="a few jars")
_INES_PRICE = Piece("D3:7", "ines_price", "Ines", "7 euros", swap="9 euros", vague="a few euros")

BEES_QUESTIONS = (
    Question(1, "How many jars of honey did Ines harvest?", "14 jars", "single-hop", (_INES_JARS,),
             pred="Ines harvested 14 jars of honey.",
             unknown="The memories do not say how many jars of honey Ines harvested.",
             confusion=("9 jars",), confused="Ines harvested 9 jars of honey.",
             followups=("How much honey did Ines get from her hives?", "Ines harvested jars of honey from her two hives.")),
    Question(2, "When did Ines do her first honey harvest?", "19 May 2024", "temporal",
             (Piece("D3:3", "ines_harvest", "Ines", "19 May 2024", msg_value="19 May", swap="18 May 2024",
                    msg_swap="18 May", vague="a day in May 2024"),),
             pred="Ines did her first honey harvest on 19 May 2024.",
             unknown="The memories do not mention when Ines did her first honey harvest.",
             confusion=("18 May",), confused="On 18 May 2024, the day of the Tarrow honey show.",
             slip="On 26 May 2024.",
             followups=("On what date did Ines first harvest honey?", "Ines did her first honey harvest in May 2024.")),
    Question(3, "How many jars of honey did Ines and Marcus harvest altogether this spring?", "23 jars", "multi-hop",
             (_INES_JARS, _MARCUS_JARS),
             pred="Together they harvested 23 jars of honey (14 + 9).",
             unknown="The memories give only part of the harvest amounts, so the total cannot be determined.",
             slip="Together they harvested 44 jars of honey (14 + 30).",
             followups=("How many jars of honey did Ines harvest?", "How many jars of honey did Marcus harvest this spring?")),
    Question(4, "When did one of Marcus's hives swarm?", "9 April 2024", "temporal",
             (Piece("D2:1", "marcus_swarm", "Marcus", "9 April 2024", msg_value="swarmed last Tuesday", relative=True,
                    swap="6 April 2024", vague="a day in early April 2024"),),
             pred="One of Marcus's hives swarmed on 9 April 2024.",
             unknown="The memories do not say when Marcus's hive swarmed.",
             confusion=("6 April",), confused="On 6 April 2024.", slip="On 2 April 2024.",
             followups=("On what date did Marcus lose half a colony to a swarm?", "Marcus's hive swarmed in April 2024.")),
    Question(5, "Where does Ines sell her honey?", "At the Saturday market in Dunmore", "single-hop",
             (Piece("D3:7", "ines_price", "Ines", "Dunmore", swap="Kellsbridge", vague="town"),),
             pred="Ines sells her honey at the Saturday market in Dunmore.",
             unknown="The memories do not say where Ines sells her honey.",
             confusion=("Kellsbridge",), confused="At the Kellsbridge farm shop.",
             followups=("Which market does Ines sell her honey jars at?", "Ines sells honey at a market.")),
    Question(6, "What breed of bees did Ines order?", "Buckfast bees", "single-hop",
             (Piece("D1:5", "ines_bees", "Ines", "Buckfast", swap="Carniolan", vague="gentle"),),
             pred="Ines ordered Buckfast bees.", unknown="The memories do not say which bees Ines ordered.",
             confusion=("Carniolan",), confused="Carniolan bees.",
             followups=("Which bees did Ines buy from a breeder?", "Ines ordered bees from a breeder in Wales.")),
    Question(7, "Is Ines going to the beekeeping conference in Ghent?", "No, the train tickets were too expensive",
             "open-domain",
             (Piece("D4:1", "ines_no_ghent", "Ines", "not going to the beekeeping conference in Ghent",
                    msg_value="not going to the Ghent conference", vague="unsure about the beekeeping conference in Ghent"),),
             pred="No, Ines is not going; the train tickets were too expensive.",
             unknown="The memories do not say whether Ines is going to the Ghent conference.",
             confusion=("planning to attend the beekeeping conference in Ghent",
                        "thinking about going to the beekeeping conference in Ghent"),
             confused="Yes, Ines plans to attend the beekeeping conference in Ghent in July.",
             followups=("Did Ines change her plans for the Ghent beekeeping conference?",
                        "Ines decided about the conference in Ghent.")),
    Question(8, "What role does Ines have on the Elm Street garden committee?", "Treasurer", "single-hop",
             (Piece("D2:4", "ines_treasurer", "Ines", "treasurer", vague="a member"),),
             pred="Ines is the treasurer of the Elm Street garden committee.",
             unknown="The memories do not say what Ines does on the committee.",
             followups=("What position does Ines hold in the community garden committee?",
                        "Ines joined the Elm Street community garden committee.")),
    Question(9, "When is Marcus giving his talk on swarm prevention?", "2 July 2024", "temporal",
             (Piece("D4:2", "marcus_talk", "Marcus", "2 July 2024", msg_value="2 July", swap="12 June 2024",
                    msg_swap="12 June", vague="a day in early summer 2024"),),
             pred="Marcus is giving his talk at the Tarrow library on 2 July 2024.",
             unknown="The memories do not say when Marcus's talk is.",
             confusion=("12 June",), confused="On 12 June 2024.",
             followups=("What is the date of Marcus's library talk?", "Marcus gives a talk at the Tarrow library.")),
    Question(10, "How much more does Marcus charge for a jar of honey than Ines?", "2 euros", "multi-hop",
             (_INES_PRICE, Piece("D3:8", "marcus_price", "Marcus", "9 euros", swap="7 euros", vague="several euros")),
             pred="Marcus charges 2 euros more per jar (9 euros against 7 euros).",
             unknown="The memories do not give both prices, so the difference cannot be computed.",
             slip="Marcus charges 3 euros more per jar.",
             followups=("What price does Ines ask for a jar of honey?", "What price does Marcus ask for a jar of honey?")),
    Question(12, "How many bee colonies does Marcus keep now?", "Six", "single-hop",
             (Piece("D3:8", "marcus_six", "Marcus", "six bee colonies", msg_value="six colonies",
                    swap="five bee colonies", msg_swap="five colonies", vague="several bee colonies"),),
             pred="Marcus now keeps six bee colonies.", unknown="The memories do not say how many colonies Marcus has now.",
             confusion=("five beehives", "five hives", "five bee colonies"), confused="Marcus keeps five hives.",
             followups=("How many hives does Marcus have after the split?", "Marcus split a hive to make a new colony.")),
    Question(13, "How much money did the Elm Street plant sale raise?", "620 euros", "single-hop",
             (Piece("D3:1", "sale_raised", "plant sale", "620 euros", swap="260 euros", vague="some money"),),
             pred="The plant sale raised 620 euros.", unknown="The memories do not say how much the plant sale raised.",
             followups=("How much did the garden committee make from the plant sale?",
                        "The plant sale raised money for a rainwater tank.")),
    Question(14, "What is Ines growing so that her bees have food?", "Lavender and borage", "single-hop",
             (Piece("D1:7", "ines_plants", "Ines", "lavender and borage", vague="flowers"),),
             pred="Ines is growing lavender and borage around her hives.",
             unknown="The memories do not say what Ines grows for her bees.",
             followups=("Which plants is Ines planting around her hives for forage?",
                        "Ines is planting flowers around her hives for forage.")),
)

MUSIC = Conversation(
    32, "Priya", "Jonah",
    (
        Session("7:05 pm on 2 February, 2024", (
            M("D1:1", "Priya", "Jonah, I got in! I'm the new second cellist of the Westbrook Community Orchestra.",
              F("priya_orch", "Priya joined the Westbrook Community Orchestra as second cellist."),
              topic="joining an orchestra"),
            M("D1:2", "Jonah", "Fantastic! And our quartet just booked its first concert, 16 March at Saint Aidan's "
              "Church.",
              F("jonah_concert", "Jonah's string quartet booked its first concert for 16 March 2024 at Saint "
                "Aidan's Church."), topic="upcoming concerts"),
            M("D1:3", "Priya", "I'll be there! Our spring concert is on 23 March at the Corn Exchange, we're playing "
              "Dvorak's Eighth.",
              F("priya_concert", "Priya's orchestra will play its spring concert on 23 March 2024 at the Corn "
                "Exchange, performing Dvorak's Eighth Symphony."), topic="upcoming concerts"),
            M("D1:4", "Jonah", "Great piece. We're doing Schubert's Death and the Maiden, with me on viola of course.",
              F("jonah_piece", "Jonah's quartet is playing Schubert's Death and the Maiden, with Jonah on viola."),
              topic="concert programmes"),
            M("D1:5", "Priya", "Our rehearsals are every Tuesday evening in the Westbrook school hall.",
              F("priya_rehearsals", "Priya's orchestra rehearses every Tuesday evening in the Westbrook school "
                "hall."), topic="rehearsal routines", new=True),
            M("D1:6", "Jonah", "We rehearse on Thursdays in Marta's living room, she's our first violinist.",
              F("jonah_rehearsals", "Jonah's quartet rehearses on Thursdays in the living room of Marta, the first "
                "violinist."), topic="rehearsal routines"),
            M("D1:7", "Priya", "I've been playing cello for 12 years now, since I was 15.",
              F("priya_years", "Priya has played the cello for 12 years, since she was 15."),
              topic="years of playing"),
            M("D1:8", "Jonah", "I switched from violin to viola 6 years ago and never looked back.",
              F("jonah_switch", "Jonah switched from violin to viola 6 years ago."), topic="years of playing"),
        )),
        Session("8:30 pm on 24 March, 2024", (
            M("D2:1", "Jonah", "Your concert last night was wonderful, the slow movement gave me chills.",
              F("jonah_heard", "Jonah attended Priya's orchestra concert on 23 March 2024."),
              topic="the spring concerts"),
            M("D2:2", "Priya", "Thank you! How did your own concert go, how many people came?"),
            M("D2:3", "Jonah", "About 85 people, and we raised 1,100 pounds for the church roof.",
              F("jonah_audience", "Jonah's quartet concert had an audience of about 85 people and raised 1,100 "
                "pounds for the church roof."), topic="concert audiences"),
            M("D2:4", "Priya", "Our concert sold 240 tickets, the biggest audience the orchestra has ever had.",
              F("priya_audience", "Priya's orchestra concert sold 240 tickets, its biggest audience ever."),
              topic="concert audiences"),
            M("D2:5", "Jonah", "Bad news though: I cracked the bridge of my viola on Wednesday.",
              F("jonah_bridge", "Jonah cracked the bridge of his viola on 20 March 2024."),
              topic="a viola repair", new=True),
            M("D2:6", "Priya", "Ouch. Try Halvorsen's workshop on Mill Lane, they fixed the seam of my cello in "
              "January.",
              F("priya_seam", "Halvorsen's workshop on Mill Lane fixed the seam of Priya's cello in January 2024."),
              topic="a viola repair"),
            M("D2:7", "Jonah", "Thanks, I'll drop it there tomorrow. They quoted 60 pounds on the phone.",
              F("jonah_quote", "Jonah is taking his viola to Halvorsen's workshop on 25 March 2024; the repair was "
                "quoted at 60 pounds."), topic="a viola repair"),
            M("D2:8", "Priya", "Also, I signed up for a cello masterclass with Ariane Mollet in Lyon on 11 May!",
              F("priya_masterclass", "Priya signed up for a cello masterclass with Ariane Mollet in Lyon on 11 May "
                "2024."), topic="a masterclass in Lyon", new=True),
        )),
        Session("9:15 am on 19 May, 2024", (
            M("D3:1", "Jonah", "So, how was Lyon?"),
            M("D3:2", "Priya", "Intense but amazing. Ariane made me rework my bowing in the Elgar concerto.",
              F("priya_bowing", "At the Lyon masterclass, Ariane Mollet made Priya rework her bowing in the Elgar "
                "cello concerto."), topic="the Lyon masterclass"),
            M("D3:3", "Jonah", "The Elgar! Are you performing it?"),
            M("D3:4", "Priya", "The first movement, as a soloist with the orchestra on 29 June at the Corn Exchange.",
              F("priya_solo", "Priya will perform the first movement of the Elgar cello concerto as a soloist with "
                "her orchestra on 29 June 2024 at the Corn Exchange."), topic="an Elgar solo"),
            M("D3:5", "Jonah", "Incredible. Our quartet has been invited to the Harrowgate chamber festival on 6 July.",
              F("jonah_festival", "Jonah's quartet was invited to the Harrowgate chamber festival on 6 July 2024."),
              topic="summer performances"),
            M("D3:6", "Priya", "Did the viola repair hold up?"),
            M("D3:7", "Jonah", "Yes, Halvorsen's replaced the bridge for 60 pounds and it sounds even better now.",
              F("jonah_repaired", "Halvorsen's workshop replaced the bridge of Jonah's viola for 60 pounds.",
                replaces="jonah_quote"), topic="the viola repair"),
            M("D3:8", "Jonah", "One sad thing: Marta is leaving the quartet in August, she's moving to Edinburgh for a "
              "new job.",
              F("marta_leaving", "Marta, the first violinist of Jonah's quartet, is leaving in August 2024 because "
                "she is moving to Edinburgh for a new job."), topic="a violinist leaving", new=True),
            M("D3:9", "Priya", "Oh no! Who will replace her?"),
            M("D3:10", "Jonah", "We're auditioning violinists on 1 June.",
              F("jonah_auditions", "Jonah's quartet is auditioning violinists on 1 June 2024."),
              topic="a violinist leaving"),
        )),
        Session("6:45 pm on 8 July, 2024", (
            M("D4:1", "Jonah", "The festival went well, and we found our new violinist: Sung-min, a music student "
              "from Leeds.",
              F("jonah_new_violinist", "Jonah's quartet chose Sung-min, a music student from Leeds, as its new "
                "violinist."), topic="a new violinist"),
            M("D4:2", "Priya", "Wonderful! My Elgar performance got a standing ovation.",
              F("priya_ovation", "Priya's Elgar performance received a standing ovation."),
              topic="the Elgar performance"),
            M("D4:3", "Jonah", "I heard! Sorry I missed it, I had the flu that whole week.",
              F("jonah_flu", "Jonah missed Priya's Elgar performance because he had the flu."),
              topic="the Elgar performance"),
            M("D4:4", "Priya", "No worries. I'm taking August off from the orchestra to travel to Kerala with my "
              "parents.",
              F("priya_kerala", "Priya is taking August 2024 off from the orchestra to travel to Kerala with her "
                "parents."), topic="summer plans", new=True),
            M("D4:5", "Jonah", "Lovely. We rehearse on Wednesdays now, Sung-min has classes on Thursdays.",
              F("jonah_wednesdays", "Jonah's quartet now rehearses on Wednesdays because Sung-min has classes on "
                "Thursdays.", replaces="jonah_rehearsals"), topic="rehearsal routines"),
            M("D4:6", "Priya", "Makes sense. Send me the date of your autumn concert!"),
        )),
    ),
)

MUSIC_QUESTIONS = (
    Question(1, "When did Jonah's quartet play its first concert?", "16 March 2024", "temporal",
             (Piece("D1:2", "jonah_concert", "Jonah", "16 March 2024", msg_value="16 March", swap="23 March 2024",
                    msg_swap="23 March", vague="a date in March 2024"),),
             pred="Jonah's quartet played its first concert on 16 March 2024.",
             unknown="The memories do not say when the quartet's first concert was.",
             confusion=("23 March",), confused="On 23 March 2024.",
             followups=("On what date was the string quartet's first concert?",
                        "Jonah's quartet booked its first concert at Saint Aidan's Church.")),
    Question(2, "Where did Priya's orchestra play its spring concert?", "At the Corn Exchange", "single-hop",
             (Piece("D1:3", "priya_concert", "Priya", "Corn Exchange", also=("spring concert",),
                    swap="Saint Aidan's Church", vague="city centre"),),
             pred="Priya's orchestra played its spring concert at the Corn Exchange.",
             unknown="The memories do not say where the spring concert took place.",
             confusion=("Saint Aidan's Church",), confused="At Saint Aidan's Church.",
             followups=("Which venue hosted the Westbrook orchestra's spring concert?",
                        "Priya's orchestra played Dvorak's Eighth Symphony.")),
    Question(3, "How many more people came to Priya's orchestra concert than to Jonah's quartet concert?",
             "About 155 more (240 against about 85)", "multi-hop",
             (Piece("D2:4", "priya_audience", "Priya", "240 tickets", swap="140 tickets", vague="many tickets"),
              Piece("D2:3", "jonah_audience", "Jonah", "85 people", swap="185 people", vague="a few dozen people")),
             pred="About 155 more people (240 tickets sold against about 85 people).",
             unknown="The memories do not give both audience sizes.",
             slip="About 325 more people.",
             followups=("How many tickets did Priya's orchestra concert sell?",
                        "How many people came to Jonah's quartet concert?")),
    Question(4, "When did Jonah crack the bridge of his viola?", "20 March 2024", "temporal",
             (Piece("D2:5", "jonah_bridge", "Jonah", "20 March 2024",
                    msg_value="cracked the bridge of my viola on Wednesday", relative=True, swap="25 March 2024",
                    vague="a day in March 2024"),),
             pred="Jonah cracked the bridge of his viola on 20 March 2024.",
             unknown="The memories do not say when the viola bridge cracked.",
             confusion=("25 March",), confused="On 25 March 2024.", slip="On 27 March 2024.",
             followups=("On what date did Jonah damage his viola?", "Jonah's viola bridge cracked in March 2024.")),
    Question(5, "How much did the repair of Jonah's viola bridge cost?", "60 pounds", "single-hop",
             (Piece("D3:7", "jonah_repaired", "Jonah", "60 pounds", swap="1,100 pounds", vague="a small fee"),),
             pred="The bridge repair cost 60 pounds.", unknown="The memories do not say what the repair cost.",
             confusion=("1,100 pounds",), confused="1,100 pounds.",
             followups=("What price did Halvorsen's workshop charge for the viola?",
                        "Halvorsen's workshop replaced the bridge of Jonah's viola.")),
    Question(6, "Which workshop fixed the seam of Priya's cello?", "Halvorsen's workshop on Mill Lane", "single-hop",
             (Piece("D2:6", "priya_seam", "Priya", "Halvorsen's workshop", also=("seam",), vague="a workshop"),),
             pred="Halvorsen's workshop on Mill Lane fixed the seam of Priya's cello.",
             unknown="The memories do not say who repaired Priya's cello.",
             followups=("Who repaired Priya's cello in January?", "Priya's cello seam was fixed in January 2024.")),
    Question(7, "Who taught the cello masterclass Priya attended in Lyon?", "Ariane Mollet", "single-hop",
             (Piece("D2:8", "priya_masterclass", "Priya", "Ariane Mollet", vague="a visiting cellist"),),
             pred="Ariane Mollet taught the masterclass.", unknown="The memories do not name the masterclass teacher.",
             followups=("Which cellist ran the masterclass in Lyon?", "Priya attended a cello masterclass in Lyon.")),
    Question(8, "When will Priya perform the Elgar concerto as a soloist?", "29 June 2024", "temporal",
             (Piece("D3:4", "priya_solo", "Priya", "29 June 2024", msg_value="29 June", also=("soloist",),
                    swap="6 July 2024", msg_swap="6 July", vague="a date this summer"),),
             pred="Priya performs the Elgar concerto as a soloist on 29 June 2024.",
             unknown="The memories do not give the date of Priya's solo.",
             confusion=("6 July",), confused="On 6 July 2024.",
             followups=("On what date is Priya's Elgar solo with the orchestra?",
                        "Priya will play the Elgar cello concerto at the Corn Exchange.")),
    Question(9, "On which day of the week does Jonah's quartet rehearse now?", "Wednesdays", "single-hop",
             (Piece("D4:5", "jonah_wednesdays", "Jonah", "Wednesdays", swap="Tuesdays", vague="weekday evenings"),),
             pred="Jonah's quartet now rehearses on Wednesdays.",
             unknown="The memories do not say when the quartet rehearses now.",
             confusion=("Thursdays",), confused="On Thursdays.",
             followups=("What is the quartet's current rehearsal day?", "Jonah's quartet changed its rehearsal day.")),
    Question(10, "Why is Marta leaving Jonah's quartet?", "She is moving to Edinburgh for a new job", "open-domain",
             (Piece("D3:8", "marta_leaving", "Marta", "Edinburgh", swap="Leeds", vague="another city"),),
             pred="Because she is moving to Edinburgh for a new job.",
             unknown="The memories do not say why Marta is leaving.",
             confusion=("Leeds",), confused="Because she is moving to Leeds to study music.",
             followups=("Where is the quartet's first violinist moving?", "Marta is leaving Jonah's quartet in August 2024.")),
    Question(11, "Did Jonah see Priya's Elgar performance?", "No, he had the flu", "open-domain",
             (Piece("D4:3", "jonah_flu", "Jonah", "had the flu", also=("missed",), vague="was busy"),),
             pred="No, Jonah missed it because he had the flu.",
             unknown="The memories do not say whether Jonah was at the Elgar performance.",
             confusion=("Jonah attended Priya's orchestra concert", "Your concert last night was wonderful"),
             confused="Yes, Jonah attended Priya's performance.",
             followups=("Was Jonah in the audience for Priya's Elgar solo?", "Jonah missed Priya's performance.")),
    Question(12, "Who is the new violinist in Jonah's quartet?", "Sung-min, a music student from Leeds", "single-hop",
             (Piece("D4:1", "jonah_new_violinist", "Jonah", "Sung-min", also=("new violinist",),
                    vague="someone"),),
             pred="Sung-min, a music student from Leeds.", unknown="The memories do not name the new violinist.",
             confusion=("Marta",), confused="Marta, the first violinist.",
             followups=("Which violinist did the quartet choose after the auditions?",
                        "Jonah's quartet found a new violinist.")),
    Question(13, "How long has Priya been playing the cello?", "12 years", "single-hop",
             (Piece("D1:7", "priya_years", "Priya", "12 years", swap="6 years", vague="many years"),),
             pred="Priya has played the cello for 12 years, since she was 15.",
             unknown="The memories do not say how long Priya has played.",
             confusion=("6 years",), confused="6 years.",
             followups=("Since what age has Priya played the cello?", "Priya has played the cello for years.")),
    Question(14, "What did Ariane ask Priya to change?", "Her bowing in the Elgar concerto", "single-hop",
             (Piece("D3:2", "priya_bowing", "Priya", "bowing", also=("Elgar",), vague="playing"),),
             pred="Ariane made Priya rework her bowing in the Elgar concerto.",
             unknown="The memories do not say what Ariane asked Priya to change.",
             followups=("What did Priya rework at the Lyon masterclass with Ariane Mollet?",
                        "Ariane Mollet made Priya rework her playing in the Elgar cello concerto.")),
)

DOGS = Conversation(
    33, "Rosa", "Kenji",
    (
        Session("4:20 pm on 6 August, 2023", (
            M("D1:1", "Rosa", "Kenji, meet Biscuit! He's the beagle I'm fostering for Paws and Pines, he arrived on "
              "Thursday.",
              F("rosa_biscuit", "Rosa started fostering Biscuit, a beagle from the Paws and Pines shelter, on 3 "
                "August 2023."), topic="fostering a beagle"),
            M("D1:2", "Kenji", "He's adorable! I walk dogs at Northgate Animal Rescue every Saturday morning.",
              F("kenji_walks", "Kenji walks dogs at Northgate Animal Rescue every Saturday morning."),
              topic="shelter volunteering"),
            M("D1:3", "Rosa", "Biscuit is 4 years old and terrified of thunderstorms, poor thing.",
              F("biscuit_age", "Biscuit the beagle is 4 years old and terrified of thunderstorms."),
              topic="nervous dogs"),
            M("D1:4", "Kenji", "There's a greyhound at Northgate called Pepper who is scared of storms too, she's 6.",
              F("pepper", "Pepper is a 6-year-old greyhound at Northgate Animal Rescue who is scared of storms."),
              topic="nervous dogs"),
            M("D1:5", "Rosa", "Are you still doing the kayak trip on Lake Varna next weekend?", new=True,
              topic="a kayak trip"),
            M("D1:6", "Kenji", "Yes, on 12 August with my brother Daisuke. We're paddling 18 kilometres along the "
              "north shore.",
              F("kenji_trip", "Kenji is kayaking 18 kilometres along the north shore of Lake Varna with his "
                "brother Daisuke on 12 August 2023."), topic="a kayak trip"),
            M("D1:7", "Rosa", "Jealous! I only did 7 kilometres on the Cardell reservoir last month.",
              F("rosa_paddle", "Rosa kayaked 7 kilometres on the Cardell reservoir in July 2023."),
              topic="kayaking distances"),
            M("D1:8", "Kenji", "Everyone starts somewhere. Bring Biscuit next time, dogs love the beach at the canoe "
              "club."),
        )),
        Session("12:10 pm on 2 September, 2023", (
            M("D2:1", "Kenji", "The Lake Varna trip was amazing, we saw a family of otters near Bell Point.",
              F("kenji_otters", "On the Lake Varna kayak trip, Kenji saw a family of otters near Bell Point."),
              topic="otters at Lake Varna"),
            M("D2:2", "Rosa", "Otters! Biscuit news: a couple from Harlow applied to adopt him.",
              F("biscuit_application", "A couple from Harlow applied to adopt Biscuit."),
              topic="an adoption application", new=True),
            M("D2:3", "Kenji", "That's great, will you miss him?"),
            M("D2:4", "Rosa", "Terribly. The home visit is on 9 September, and he could go to his new home on the 16th.",
              F("biscuit_visit", "The home visit for Biscuit's adoption is on 9 September 2023, and Biscuit could "
                "move to his new home on 16 September 2023."), topic="an adoption application"),
            M("D2:5", "Kenji", "I've decided to adopt Pepper myself, I'm picking her up on 23 September.",
              F("kenji_pepper", "Kenji decided to adopt Pepper the greyhound and is picking her up on 23 September "
                "2023."), topic="adopting a greyhound"),
            M("D2:6", "Rosa", "No way! Greyhounds are couch potatoes, she'll love your flat."),
            M("D2:7", "Kenji", "I already bought her a bed and a winter coat, the coat was 35 euros.",
              F("kenji_coat", "Kenji bought Pepper a dog bed and a winter coat; the coat cost 35 euros."),
              topic="adopting a greyhound"),
            M("D2:8", "Rosa", "I'm also training for my kayak instructor certificate, the exam is on 14 October.",
              F("rosa_exam", "Rosa is training for her kayak instructor certificate, and the exam is on 14 October "
                "2023."), topic="an instructor exam", new=True),
        )),
        Session("5:55 pm on 22 October, 2023", (
            M("D3:1", "Kenji", "So, did you pass?"),
            M("D3:2", "Rosa", "I did! 88 out of 100 on the theory part, and the practical went fine.",
              F("rosa_passed", "Rosa passed her kayak instructor exam with 88 out of 100 on the theory part.",
                replaces="rosa_exam"), topic="an instructor exam"),
            M("D3:3", "Kenji", "Congratulations, instructor Rosa! Pepper has settled in, she sleeps 18 hours a day.",
              F("pepper_settled", "Pepper has settled in at Kenji's home and sleeps 18 hours a day."),
              topic="a settled greyhound"),
            M("D3:4", "Rosa", "Ha! Biscuit was adopted by the Harlow couple after all, they renamed him Captain.",
              F("biscuit_adopted", "Biscuit was adopted by the couple from Harlow, who renamed him Captain.",
                retires="biscuit_application"), topic="Biscuit's adoption"),
            M("D3:5", "Kenji", "Captain suits him. Are you fostering another dog?"),
            M("D3:6", "Rosa", "Yes, a collie mix called Mango, she arrived on Tuesday from Paws and Pines.",
              F("rosa_mango", "Rosa started fostering Mango, a collie mix from Paws and Pines, on 17 October 2023."),
              topic="a new foster dog"),
            M("D3:7", "Kenji", "Another one! I'm going to start teaching Pepper to walk on a lead without pulling.",
              F("kenji_lead", "Kenji is teaching Pepper to walk on a lead without pulling."), topic="lead training"),
            M("D3:8", "Rosa", "Try a harness from Trailhound, it worked wonders for Biscuit.",
              F("rosa_harness", "Rosa recommended a Trailhound harness, which worked well for Biscuit."),
              topic="lead training"),
            M("D3:9", "Kenji", "Will do. I'm also leading a beach clean-up at Lake Varna with the canoe club on 4 "
              "November.",
              F("kenji_cleanup", "Kenji is leading a beach clean-up at Lake Varna with the canoe club on 4 November "
                "2023."), topic="a beach clean-up", new=True),
        )),
        Session("10:30 am on 12 November, 2023", (
            M("D4:1", "Kenji", "The clean-up collected 63 bags of rubbish, and 22 volunteers showed up.",
              F("cleanup_result", "Kenji's beach clean-up collected 63 bags of rubbish with 22 volunteers."),
              topic="the clean-up result"),
            M("D4:2", "Rosa", "That's huge! I taught my first beginners' kayak class yesterday, 6 students.",
              F("rosa_class", "Rosa taught her first beginners' kayak class on 11 November 2023, with 6 students."),
              topic="a first kayak class"),
            M("D4:3", "Kenji", "How did it go?"),
            M("D4:4", "Rosa", "One student capsized but laughed it off. I'll teach every second Saturday at the "
              "Cardell canoe club.",
              F("rosa_schedule", "Rosa will teach beginners' kayak classes every second Saturday at the Cardell "
                "canoe club."), topic="a teaching schedule"),
            M("D4:5", "Kenji", "Pepper says hi, she finally walks without pulling. The harness did it.",
              F("pepper_lead", "Pepper now walks on a lead without pulling, thanks to the harness.",
                replaces="kenji_lead"), topic="lead training", new=True),
            M("D4:6", "Rosa", "Yay! And Mango is getting adopted next week by a farmer in Dunloe.",
              F("mango_adoption", "Mango is being adopted by a farmer in Dunloe in the week after 12 November 2023."),
              topic="Mango's adoption"),
        )),
    ),
)

DOGS_QUESTIONS = (
    Question(1, "When did Rosa start fostering Biscuit?", "3 August 2023", "temporal",
             (Piece("D1:1", "rosa_biscuit", "Rosa", "3 August 2023", msg_value="he arrived on Thursday", relative=True,
                    swap="17 October 2023", vague="a day in summer 2023"),),
             pred="Rosa started fostering Biscuit on 3 August 2023.",
             unknown="The memories do not say when Biscuit came to Rosa.",
             confusion=("17 October",), confused="On 17 October 2023.", slip="On 10 August 2023.",
             followups=("On what date did Biscuit the beagle arrive at Rosa's home?",
                        "Rosa fosters Biscuit for the Paws and Pines shelter.")),
    Question(2, "How far did Kenji paddle on his Lake Varna trip?", "18 kilometres", "single-hop",
             (Piece("D1:6", "kenji_trip", "Kenji", "18 kilometres", swap="7 kilometres", vague="a long way"),),
             pred="Kenji paddled 18 kilometres along the north shore of Lake Varna.",
             unknown="The memories do not say how far Kenji paddled.",
             confusion=("7 kilometres",), confused="7 kilometres.",
             followups=("What distance did Kenji kayak with his brother?", "Kenji kayaked along Lake Varna's north shore.")),
    Question(3, "How old is Biscuit?", "4 years old", "single-hop",
             (Piece("D1:3", "biscuit_age", "Biscuit", "4 years old", swap="6 years old", vague="still young"),),
             pred="Biscuit is 4 years old.", unknown="The memories do not say how old Biscuit is.",
             confusion=("6-year-old", "she's 6", "6 years old"), confused="Biscuit is 6 years old.",
             followups=("What age is the beagle Rosa fosters?", "Biscuit the beagle is afraid of thunderstorms.")),
    Question(4, "When did Kenji pick up Pepper?", "23 September 2023", "temporal",
             (Piece("D2:5", "kenji_pepper", "Kenji", "23 September 2023", msg_value="23 September",
                    swap="16 September 2023", msg_swap="16 September", vague="a day in September 2023"),),
             pred="Kenji picked up Pepper on 23 September 2023.",
             unknown="The memories do not say when Kenji picked Pepper up.",
             confusion=("16 September",), confused="On 16 September 2023.",
             followups=("On what date did Kenji bring the greyhound home?", "Kenji decided to adopt Pepper the greyhound.")),
    Question(5, "What did Biscuit's adopters rename him?", "Captain", "single-hop",
             (Piece("D3:4", "biscuit_adopted", "Biscuit", "Captain", vague="a new name"),),
             pred="They renamed him Captain.", unknown="The memories do not give Biscuit's new name.",
             followups=("What new name did the Harlow couple give Biscuit?", "Biscuit was adopted by a couple from Harlow.")),
    Question(6, "What score did Rosa get on the theory part of her kayak instructor exam?", "88 out of 100",
             "single-hop",
             (Piece("D3:2", "rosa_passed", "Rosa", "88 out of 100", swap="63 out of 100", vague="a good score"),),
             pred="Rosa scored 88 out of 100 on the theory part.", unknown="The memories do not give Rosa's score.",
             followups=("How well did Rosa do in her kayak instructor theory exam?",
                        "Rosa passed her kayak instructor exam.")),
    Question(7, "What animals did Kenji see at the lake where he later led a beach clean-up?",
             "A family of otters", "multi-hop",
             (Piece("D2:1", "kenji_otters", "Kenji", "otters", also=("Lake Varna",), vague="animals"),
              Piece("D3:9", "kenji_cleanup", "Kenji", "beach clean-up", also=("Lake Varna",), vague="community event")),
             pred="A family of otters, near Bell Point on Lake Varna.",
             unknown="The memories do not connect the clean-up lake with any animals Kenji saw.",
             followups=("Where did Kenji lead a beach clean-up?", "What wildlife did Kenji see on his kayak trip?")),
    Question(8, "Which dogs has Rosa fostered for Paws and Pines?", "Biscuit and Mango", "multi-hop",
             (Piece("D1:1", "rosa_biscuit", "Rosa", "Biscuit", also=("Paws and Pines",), vague="a dog"),
              Piece("D3:6", "rosa_mango", "Rosa", "Mango", also=("Paws and Pines",), vague="another dog")),
             pred="Rosa has fostered Biscuit, a beagle, and Mango, a collie mix.",
             unknown="The memories only partly cover Rosa's foster dogs.",
             followups=("Which beagle did Rosa foster for Paws and Pines?", "Which collie mix is Rosa fostering?")),
    Question(9, "Where will Rosa teach her beginners' kayak classes?", "At the Cardell canoe club", "single-hop",
             (Piece("D4:4", "rosa_schedule", "Rosa", "Cardell canoe club", msg_value="Cardell canoe club",
                    vague="local club"),),
             pred="Rosa will teach at the Cardell canoe club every second Saturday.",
             unknown="The memories do not say where Rosa will teach.",
             confusion=("Cardell reservoir",), confused="On the Cardell reservoir.",
             followups=("Which club will host Rosa's kayak lessons?", "Rosa teaches beginners' kayak classes.")),
    Question(10, "Would Pepper enjoy a thunderstorm?", "No, she is scared of storms", "open-domain",
             (Piece("D1:4", "pepper", "Pepper", "scared of storms", vague="sensitive to the weather",
                    negation=("is scared of storms", "is not scared of storms")),),
             pred="No, Pepper is scared of storms.", unknown="The memories do not say how Pepper reacts to storms.",
             negated="Yes, Pepper is not scared of storms, so she would probably be fine.",
             followups=("How does Pepper the greyhound react to storms?", "Pepper is a greyhound at Northgate.")),
    Question(11, "When did Rosa teach her first beginners' kayak class?", "11 November 2023", "temporal",
             (Piece("D4:2", "rosa_class", "Rosa", "11 November 2023",
                    msg_value="first beginners' kayak class yesterday", relative=True, swap="4 November 2023",
                    vague="a day in November 2023"),),
             pred="Rosa taught her first beginners' kayak class on 11 November 2023.",
             unknown="The memories do not say when Rosa's first class was.",
             confusion=("4 November",), confused="On 4 November 2023.", slip="On 12 November 2023.",
             followups=("On what date did Rosa give her first kayak lesson?", "Rosa taught beginners to kayak.")),
    Question(12, "How many volunteers came to Kenji's beach clean-up?", "22", "single-hop",
             (Piece("D4:1", "cleanup_result", "Kenji", "22 volunteers", swap="63 volunteers", vague="many volunteers"),),
             pred="22 volunteers came to the clean-up.", unknown="The memories do not say how many volunteers came.",
             confusion=("63 bags",), confused="63 volunteers.", slip="63 volunteers.",
             followups=("How many people helped at the Lake Varna clean-up?", "Kenji led a beach clean-up with volunteers.")),
    Question(13, "What kind of dog is Mango?", "A collie mix", "single-hop",
             (Piece("D3:6", "rosa_mango", "Mango", "collie mix", vague="young dog"),),
             pred="Mango is a collie mix.", unknown="The memories do not say what kind of dog Mango is.",
             confusion=("beagle",), confused="Mango is a beagle.",
             followups=("Which breed is Mango, the dog Rosa started fostering?",
                        "Rosa started fostering Mango, a dog from Paws and Pines.")),
)

CONVERSATIONS: tuple[tuple[Conversation, tuple[Question, ...]], ...] = (
    (BEES, BEES_QUESTIONS),
    (MUSIC, MUSIC_QUESTIONS),
    (DOGS, DOGS_QUESTIONS),
)


def check_consistency() -> list[str]:
    """Every piece must be findable where it is claimed to be; returns the problems (empty = fine)."""
    problems = []
    for conv, questions in CONVERSATIONS:
        keys = [f.key for _, m in conv.messages() for f in m.facts]
        if len(keys) != len(set(keys)):
            problems.append(f"{conv.user_id}: duplicate fact keys")
        for q in questions:
            for p in q.pieces:
                msg = conv.message(p.msg)
                fact = conv.fact(p.fact)
                if fact not in msg.facts:
                    problems.append(f"{conv.user_id} q{q.num}: fact {p.fact} not on {p.msg}")
                for lit in (p.value, p.who, *p.also):
                    if lit not in fact.text:
                        problems.append(f"{conv.user_id} q{q.num}: {lit!r} not in fact {p.fact}")
                for lit in (p.raw_value, *p.also):
                    if lit not in msg.text:
                        problems.append(f"{conv.user_id} q{q.num}: {lit!r} not in message {p.msg}")
                if p.who not in msg.text and p.who != msg.speaker:
                    problems.append(f"{conv.user_id} q{q.num}: {p.who!r} not bound to message {p.msg}")
                if p.negation and p.negation[0] not in fact.text:
                    problems.append(f"{conv.user_id} q{q.num}: negation phrase not in fact {p.fact}")
    return problems
