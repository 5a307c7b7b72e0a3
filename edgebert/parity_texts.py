"""The wide parity set: a few hundred varied texts every export is checked on besides `PARITY_SENTENCES`.

A dozen sentences cannot show how an 8-bit recipe behaves on the inputs an app meets: the default teacher's
int8-static ONNX export passed its gate on them and measured min cosine 0.988 over 800 held-out STS-B sentences.
These texts are built deterministically from the base sentences below (news, conversation, reviews, science,
instructions, legal and finance, sport, health, code and numbers, other languages, emoji): each sentence as it is,
in lower case, upper case and without its final punctuation, its first half, its first one to three words (the
shortest inputs), runs of two and of six consecutive sentences (medium and long), and of ten (beyond 128 tokens:
truncated as apps truncate). Every other variant is a parity text, the rest guard texts for the recipes. None is
a parity or guard sentence of `edgebert.parity`, and nothing here comes from a data set edgebert measures retention
on.
"""

from __future__ import annotations

BASE_SENTENCES: tuple[str, ...] = (
    "The city council voted on Tuesday to extend the night bus service until the end of the year.",
    "Officials said the bridge would stay closed while engineers inspected the damaged supports.",
    "Thousands of people gathered in the square to watch the fireworks on New Year's Eve.",
    "The company reported a quarterly loss of 42 million dollars, blaming higher energy costs.",
    "Rescue teams reached the village after the floodwater began to recede on Sunday morning.",
    "hey are we still on for lunch tomorrow?",
    "no worries, i'll grab the tickets on my way home",
    "Can you remind me what time the meeting starts?",
    "omg that was the best concert ever!!! 🎶🎉",
    "I think I left my keys in your car, can you check?",
    "The battery lasts two full days and the screen is bright enough to read outside.",
    "Terrible customer service: I waited forty minutes and nobody answered.",
    "The soup was cold, but the bread was fresh and the staff were friendly.",
    "Five stars, would definitely buy this blender again.",
    "The hotel room was small, noisy and far more expensive than advertised.",
    "Mitochondria produce most of the chemical energy needed by the cell.",
    "The telescope detected water vapour in the atmosphere of a distant exoplanet.",
    "Vaccines train the immune system to recognise a pathogen without causing the disease.",
    "The experiment was repeated three times and the results were consistent within two percent.",
    "Plate tectonics explains why earthquakes cluster along the edges of continents.",
    "Preheat the oven to 180 degrees and grease a round baking tin.",
    "Unplug the router, wait thirty seconds, then plug it back in.",
    "Turn left at the second traffic light and the pharmacy is on your right.",
    "Mix the flour and sugar before adding the eggs one at a time.",
    "Press and hold the power button until the logo appears.",
    "The tenant shall pay the rent on the first day of each calendar month.",
    "This agreement may be terminated by either party with thirty days' written notice.",
    "Interest is calculated daily and credited to the account at the end of each month.",
    "The fund's annual management fee is 0.75% of the net asset value.",
    "Shareholders approved the merger at the extraordinary general meeting.",
    "The striker scored twice in the second half to win the match 3-1.",
    "She broke the national record in the 400 metres by almost a second.",
    "The final was postponed because of heavy rain and lightning.",
    "After a slow start, the home team dominated possession for the rest of the game.",
    "Drink plenty of water and rest if you have a fever.",
    "The doctor recommended thirty minutes of walking every day.",
    "Symptoms usually appear two to fourteen days after exposure.",
    "Take one tablet twice a day with food for seven days.",
    "def add(a, b): return a + b",
    "Error 404: the requested page could not be found.",
    "The build failed at step 3/7 with exit code 137 (out of memory).",
    "Call +44 20 7946 0958 or write to support@example.org before 17:00 UTC.",
    "Version 3.12.1 was released on 2025-10-07 with 214 bug fixes.",
    "La réunion est reportée à jeudi prochain à cause de la grève.",
    "Der Zug nach München hat zwanzig Minuten Verspätung.",
    "El museo abre de martes a domingo, de diez a seis.",
    "Il gatto dorme sul divano tutto il pomeriggio.",
    "Я не знаю, когда он вернётся домой.",
    "今日はとても暑いので、外に出たくない。",
    "我们明天早上八点在火车站见面。",
    "날씨가 좋아서 공원에 산책하러 갔어요.",
    "مرحبا، كيف حالك اليوم؟",
    "Just landed in Lisbon ✈️☀️ can't wait to explore!",
    "Happy birthday to my little brother 🎂🥳 love you!",
    "Monday again... ☕☕☕",
    "The old lighthouse keeper climbed the stairs every evening to light the lamp.",
    "Nobody noticed that the clock in the hall had stopped at a quarter past three.",
    "A small boat drifted slowly across the quiet lake at dawn.",
    "The library will be closed for renovation from June to September.",
    "Please keep your luggage with you at all times.",
)

SHORT_WORDS = (1, 2, 3)
RUNS = ((2, 1), (6, 2), (10, 4))  # (sentences per run, start every n-th sentence)


def _variants() -> tuple[str, ...]:
    """Every text built from `BASE_SENTENCES`, in a fixed order, each once."""
    base = BASE_SENTENCES
    texts: list[str] = []
    texts += base
    texts += [s.lower() for s in base]
    texts += [s.upper() for s in base[::2]]
    texts += [s.rstrip(".!?") for s in base]
    texts += [" ".join(s.split()[: max(1, len(s.split()) // 2)]) for s in base]
    texts += [" ".join(s.split()[:n]) for s in base for n in SHORT_WORDS]
    for run, step in RUNS:
        texts += [" ".join(base[(i + k) % len(base)] for k in range(run)) for i in range(0, len(base), step)]
    return tuple(dict.fromkeys(t for t in texts if t.strip()))


def wide_parity_texts() -> tuple[str, ...]:
    """The texts every export's parity is checked on: every other variant (about 270), in a fixed order."""
    return _variants()[0::2]


def wide_guard_texts() -> tuple[str, ...]:
    """The other half of the variants, disjoint from `wide_parity_texts`: what a quantization recipe may measure its
    own choices on, so that the parity check that follows is not scored on what the recipe was tuned on."""
    return _variants()[1::2]
