"""Three hand-written two-speaker conversations with their questions (LoCoMo-style).

Message ids are ``<conv>:D<session>:<n>`` with n counted over the whole conversation, so a
question's evidence names the messages directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Message:
    id: str
    speaker: str
    text: str
    timestamp: str
    session: int


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    answers: tuple[str, ...]
    evidence: tuple[int, ...]
    qtype: str


@dataclass
class Conversation:
    id: str
    speakers: tuple[str, str]
    subject: str
    sessions: list[tuple[str, list[tuple[str, str]]]]
    questions: dict[str, Question] = field(default_factory=dict)

    def messages(self) -> list[Message]:
        out, n = [], 0
        for s, (stamp, turns) in enumerate(self.sessions, start=1):
            for speaker, text in turns:
                n += 1
                out.append(Message(f"{self.id}:D{s}:{n}", speaker, text, stamp, s))
        return out

    def message(self, n: int) -> Message:
        return self.messages()[n - 1]


def _q(conv: Conversation, key: str, text: str, answers, evidence, qtype="single") -> None:
    answers = (answers,) if isinstance(answers, str) else tuple(answers)
    conv.questions[key] = Question(f"{conv.id}-qa-{key}", text, answers, tuple(evidence), qtype)


BAKERY = Conversation("bakery", ("Rosa", "Tomas"), "Rosa's bakery and the lawsuit with her landlord", [
    ("10:02 am on 4 March, 2024", [
        ("Rosa", "Tomas, the landlord finally served the papers yesterday. Mr. Halvorsen is suing the bakery for $18,400 in back rent he says I owe."),
        ("Tomas", "Yesterday? Ugh. Which court is it filed in?"),
        ("Rosa", "Pierce County Superior Court. The first hearing is set for April 22."),
        ("Tomas", "Okay. Do you still have the signed lease addendum where he agreed to cut the rent during the street construction?"),
        ("Rosa", "Yes, it's in the blue binder at the shop. He signed it in June 2022 and it lowered the rent from $4,200 to $2,900 a month."),
        ("Tomas", "That addendum is your whole defense. Scan it tonight."),
        ("Rosa", "Will do. On a happier note, we hired a new baker last week, Deshawn. He used to work at a hotel in Spokane."),
        ("Tomas", "Nice! Is he doing the early mornings?"),
    ]),
    ("7:45 pm on 18 March, 2024", [
        ("Rosa", "I met with a lawyer today, Ms. Okafor. She charges $275 an hour but said the case looks strong because of the addendum."),
        ("Tomas", "Good. Did she say anything about a counterclaim?"),
        ("Rosa", "She wants to file a counterclaim for the broken walk-in freezer he never repaired. We lost about $3,100 of inventory when it died in January."),
        ("Tomas", "The freezer that died in January? I remember you throwing out all the croissant dough."),
        ("Rosa", "Exactly. Also, sales are up. March is our best month so far, mostly thanks to the cardamom buns Deshawn introduced."),
        ("Tomas", "Cardamom buns were Deshawn's idea? I thought Mom gave you that recipe."),
        ("Rosa", "No, Mom gave me the rye sourdough recipe. The cardamom buns are all Deshawn."),
        ("Tomas", "Got it. Are you still thinking about a second location?"),
        ("Rosa", "Maybe in Olympia, but not until the lawsuit is over."),
    ]),
    ("11:20 am on 23 April, 2024", [
        ("Rosa", "The hearing was yesterday. The judge didn't rule, she postponed it to June 10 because Halvorsen's lawyer filed late."),
        ("Tomas", "Postponed to June 10. Annoying but fine. How did Ms. Okafor do?"),
        ("Rosa", "Great. She showed the addendum and the judge asked Halvorsen's side to explain why they ignored it."),
        ("Tomas", "Who covered the shop while you were in court?"),
        ("Rosa", "Deshawn and Lucy, our cashier, ran everything. Lucy is Deshawn's cousin, by the way."),
        ("Tomas", "Ha, a family business inside a family business."),
    ]),
    ("4:30 pm on 12 June, 2024", [
        ("Rosa", "We settled! Halvorsen dropped the back-rent claim and agreed to pay $1,500 toward the freezer loss."),
        ("Tomas", "Settled two days after the hearing date? What made him fold?"),
        ("Rosa", "Ms. Okafor found an email where he admitted the freezer was his responsibility."),
        ("Tomas", "So will you open in Olympia now?"),
        ("Rosa", "We signed for a space on Capitol Way. Opening is planned for September, and Deshawn will run the kitchen there."),
    ]),
])
_q(BAKERY, "1", "How much back rent did the landlord sue Rosa's bakery for?", "$18,400", [1])
_q(BAKERY, "2", "In which court was the lawsuit against Rosa's bakery filed?", "Pierce County Superior Court", [3])
_q(BAKERY, "3", "What did the lease addendum lower Rosa's rent to?", "$2,900 a month", [5])
_q(BAKERY, "4", "Where did Deshawn work before joining Rosa's bakery?", "a hotel in Spokane", [7])
_q(BAKERY, "5", "How much does Ms. Okafor charge per hour?", "$275", [9])
_q(BAKERY, "6", "How much inventory did Rosa lose when the walk-in freezer died?", "about $3,100", [11])
_q(BAKERY, "7", "Who came up with the cardamom buns?", "Deshawn", [13, 15])
_q(BAKERY, "8", "Which recipe did Rosa's mom give her?", "rye sourdough", [15])
_q(BAKERY, "9", "To which date was the hearing postponed?", "June 10, 2024", [18], "temporal")
_q(BAKERY, "10", "Who ran the shop while Rosa was in court?", ["Deshawn", "Lucy"], [21, 22], "list")
_q(BAKERY, "11", "Is Lucy related to Deshawn?", "Yes, she is his cousin", [22], "yesno")
_q(BAKERY, "12", "How much did Halvorsen agree to pay toward the freezer loss?", "$1,500", [24])
_q(BAKERY, "13", "On which street is Rosa's second location?", "Capitol Way", [28])
_q(BAKERY, "14", "When is the new Olympia location planned to open?", "September", [28], "temporal")

BABY = Conversation("baby", ("Priya", "Jonas"), "Priya's pregnancy and Jonas's marathon training", [
    ("9:10 am on 6 January, 2025", [
        ("Priya", "Jonas, big news: I'm pregnant! We found out on New Year's Eve. The due date is August 14."),
        ("Jonas", "Priya, congratulations!! Does Arjun know? Wait, of course he knows."),
        ("Priya", "Ha, Arjun cried. We're telling his parents this weekend in Leeds."),
        ("Jonas", "My news is smaller: I signed up for the Manchester Marathon on April 27. My first full marathon."),
        ("Priya", "Amazing! What's your training plan?"),
        ("Jonas", "A 16-week plan from my club. Peak week is 64 km, and the longest run is 32 km three weeks before the race."),
        ("Priya", "My midwife, Carol, told me to keep swimming but stop hot yoga."),
        ("Jonas", "Swimming yes, hot yoga no. Noted for when you're tempted."),
    ]),
    ("6:30 pm on 2 February, 2025", [
        ("Priya", "Had the 12-week scan today. Everything looks healthy and the baby is about 6 cm long."),
        ("Jonas", "6 cm! Like a lime?"),
        ("Priya", "More like a plum, apparently. Also the nausea is finally easing. Ginger biscuits saved me."),
        ("Jonas", "Good. I pulled my left calf on a hill session on Tuesday, so I'm resting for five days."),
        ("Priya", "Your left calf? Did you see a physio?"),
        ("Jonas", "Yes, Marta, the physio at my running club. She said it's a mild strain and to skip hills until March."),
        ("Priya", "Skip hills until March, got it. Arjun wants to paint the nursery sage green."),
        ("Jonas", "Sage green is calm. Better than the orange he painted the kitchen."),
    ]),
    ("8:00 pm on 9 March, 2025", [
        ("Priya", "We found out it's a girl! Arjun's mum already bought three tiny raincoats."),
        ("Jonas", "A girl! Any names yet?"),
        ("Priya", "We're between Anaya and Mira. Arjun prefers Mira, I prefer Anaya."),
        ("Jonas", "Both lovely. My half marathon tune-up race was yesterday, 1:41:05, a personal best by four minutes."),
        ("Priya", "A PB! What's your marathon goal now?"),
        ("Jonas", "Marta thinks sub-3:40 is realistic if my calf holds. My old goal was 3:55."),
    ]),
    ("12:15 pm on 29 April, 2025", [
        ("Jonas", "I did it! Finished Manchester in 3:37:12 on Sunday."),
        ("Priya", "Under 3:40! I'm so proud. Did the calf hold up?"),
        ("Jonas", "The calf was fine, but my right knee ached after 35 km. Marta said ice and rest for a week."),
        ("Priya", "Rest for a week, and then come to my baby shower on May 24. It's at my sister Leela's house in York."),
        ("Jonas", "I'll be there. Should I bring anything?"),
        ("Priya", "Just yourself. Oh, and we decided: her name will be Mira."),
    ]),
])
_q(BABY, "1", "When is Priya's due date?", "August 14", [1], "temporal")
_q(BABY, "2", "In which city were Priya and Arjun going to tell Arjun's parents about the pregnancy?", "Leeds", [3])
_q(BABY, "3", "How long is the longest run in Jonas's training plan?", "32 km", [6])
_q(BABY, "4", "What activity did Priya's midwife tell her to stop?", "hot yoga", [7])
_q(BABY, "5", "How long was the baby at the 12-week scan?", "about 6 cm", [9])
_q(BABY, "6", "Which calf did Jonas pull on the hill session?", "his left calf", [12])
_q(BABY, "7", "Who is Marta?", "the physio at Jonas's running club", [14])
_q(BABY, "8", "What colour does Arjun want to paint the nursery?", "sage green", [15])
_q(BABY, "9", "Which names were Priya and Arjun considering for the baby?", ["Anaya", "Mira"], [19], "list")
_q(BABY, "10", "What was Jonas's half marathon time?", "1:41:05", [20])
_q(BABY, "11", "What was Jonas's finishing time at the Manchester Marathon?", "3:37:12", [23])
_q(BABY, "12", "Did Jonas finish the marathon under his old goal of 3:55?", "Yes", [22, 23], "yesno")
_q(BABY, "13", "Whose house is Priya's baby shower at?", "her sister Leela's house in York", [26])
_q(BABY, "14", "What name did Priya and Arjun choose for their daughter?", "Mira", [28])
_q(BABY, "15", "Which body parts gave Jonas trouble during training and the race?", ["left calf", "right knee"], [12, 25], "list")

LISBON = Conversation("lisbon", ("Elif", "Hanna"), "Elif's move to Lisbon and her Portuguese lessons", [
    ("3:00 pm on 5 May, 2024", [
        ("Elif", "Aunt Hanna, I accepted the job in Lisbon! I start at the design studio on July 1."),
        ("Hanna", "Lisbon! Your uncle and I honeymooned there. Are you taking Pixel with you?"),
        ("Elif", "Of course, the cat comes. Pixel needs a new microchip and an EU pet passport before the flight."),
        ("Hanna", "How is your Portuguese?"),
        ("Elif", "Terrible. I signed up for an evening course twice a week, on Tuesdays and Thursdays, with a tutor named Rui."),
        ("Hanna", "Tuesdays and Thursdays with Rui. And the apartment?"),
        ("Elif", "I'm looking in Alfama and Campo de Ourique. My budget is 1,300 euros a month."),
        ("Hanna", "Campo de Ourique is quieter. Alfama has the hills and the tourists."),
    ]),
    ("9:40 pm on 20 June, 2024", [
        ("Elif", "I signed a lease in Campo de Ourique! 1,250 euros a month, second floor, with a balcony."),
        ("Hanna", "Under budget! Is it close to the studio?"),
        ("Elif", "Twenty minutes by tram 28. The studio is in Chiado."),
        ("Hanna", "Tram 28, the famous yellow one. How did Pixel handle the vet?"),
        ("Elif", "Pixel got the microchip on Monday and hissed at everyone. The passport comes next week."),
        ("Hanna", "And your Portuguese class?"),
        ("Elif", "Rui says my pronunciation is improving, but I still mix up avó and avô. Grandma and grandpa!"),
        ("Hanna", "Ha! Don't call your landlord grandpa."),
    ]),
    ("10:05 am on 14 September, 2024", [
        ("Elif", "I passed the A2 Portuguese exam yesterday! I scored 78 out of 100."),
        ("Hanna", "Parabéns! Was it hard?"),
        ("Elif", "The listening part was the hardest. Rui wants me to go for B1 in February."),
        ("Hanna", "B1 in February. How is work?"),
        ("Elif", "Good. My manager, Inês, put me on the rebrand for a Porto wine company. Our team has four designers."),
        ("Hanna", "A wine rebrand? Send me a bottle."),
        ("Elif", "Ha. Also, my friend Sofia from Berlin is visiting in October for a week."),
        ("Hanna", "Take her to the Oceanário. And to that bakery in Belém."),
    ]),
    ("6:50 pm on 2 November, 2024", [
        ("Elif", "Sofia left yesterday. We did the Oceanário and a day trip to Sintra, but the Belém bakery line was too long."),
        ("Hanna", "Next time! Are you still taking the tram?"),
        ("Elif", "No, I bought a used bike for 180 euros. Rui laughs that I now know the word bicicleta better than any verb."),
        ("Hanna", "A bike on those hills? Brave. Any plans for Christmas?"),
        ("Elif", "I'm flying back to Berlin on December 20 to see Mum, and Pixel stays with my neighbor, Dona Graça."),
    ]),
])
_q(LISBON, "1", "When does Elif start at the design studio in Lisbon?", "July 1", [1], "temporal")
_q(LISBON, "2", "On which days are Elif's Portuguese classes?", ["Tuesdays", "Thursdays"], [5], "list")
_q(LISBON, "3", "What is Elif's Portuguese tutor's name?", "Rui", [5])
_q(LISBON, "4", "How much is Elif's rent in Campo de Ourique?", "1,250 euros a month", [9])
_q(LISBON, "5", "In which neighbourhood is Elif's studio?", "Chiado", [11])
_q(LISBON, "6", "What did Pixel get at the vet on Monday?", "a microchip", [13])
_q(LISBON, "7", "What score did Elif get on the A2 exam?", "78 out of 100", [17])
_q(LISBON, "8", "Which part of the A2 exam was hardest for Elif?", "the listening part", [19])
_q(LISBON, "9", "Who is Elif's manager?", "Inês", [21])
_q(LISBON, "10", "How many designers are on Elif's team?", "four", [21])
_q(LISBON, "11", "Which places did Elif and Sofia visit?", ["the Oceanário", "Sintra"], [25], "list")
_q(LISBON, "12", "Did Elif and Sofia go to the Belém bakery?", "No, the line was too long", [25], "yesno")
_q(LISBON, "13", "How much did Elif pay for her bike?", "180 euros", [27])
_q(LISBON, "14", "Who will look after Pixel at Christmas?", "her neighbor, Dona Graça", [29])
_q(LISBON, "15", "When is Elif flying back to Berlin?", "December 20", [29], "temporal")

CONVERSATIONS = {c.id: c for c in (BAKERY, BABY, LISBON)}
