"""Small synthetic conversations in the LoCoMo file format, for the fan-out tests.

Every sentence is made up here. Each conversation has two short sessions and two questions, so a
whole construct/search/evaluate run of a few of them takes about a second.
"""

from __future__ import annotations

import json
from pathlib import Path

_PLACES = ("the pottery studio", "the rowing club", "the night market", "the glass museum", "the orchard")
_ITEMS = ("a blue kite", "a cast-iron pan", "a chess clock", "a lemon tree", "a banjo")


def conversation(index: int) -> dict:
    """One LoCoMo-format sample: two speakers, two sessions of four turns, two questions."""
    place, item = _PLACES[index % len(_PLACES)], _ITEMS[index % len(_ITEMS)]
    a, b = f"Ilse{index}", f"Tomas{index}"
    sessions = {
        "session_1": [
            {"speaker": a, "dia_id": "D1:1", "text": f"I spent Saturday at {place} with my cousin."},
            {"speaker": b, "dia_id": "D1:2", "text": "That sounds lovely, did you stay long?"},
            {"speaker": a, "dia_id": "D1:3", "text": f"All afternoon, and I bought {item} on the way home."},
            {"speaker": b, "dia_id": "D1:4", "text": "Nice, show me next time."},
        ],
        "session_2": [
            {"speaker": b, "dia_id": "D2:1", "text": f"How is {item} working out?"},
            {"speaker": a, "dia_id": "D2:2", "text": f"Great, I take it to {place} every week now."},
            {"speaker": b, "dia_id": "D2:3", "text": "Good habit."},
            {"speaker": a, "dia_id": "D2:4", "text": "My cousin says the same."},
        ],
    }
    return {
        "sample_id": f"synthetic-{index}",
        "conversation": {"speaker_a": a, "speaker_b": b,
                         "session_1_date_time": "9:15 am on 3 March, 2024", "session_1": sessions["session_1"],
                         "session_2_date_time": "6:40 pm on 10 March, 2024", "session_2": sessions["session_2"]},
        "qa": [
            {"question": f"Where did {a} spend Saturday?", "answer": place, "evidence": ["D1:1"], "category": 4},
            {"question": f"What did {a} buy on the way home?", "answer": item, "evidence": ["D1:3"], "category": 4},
        ],
    }


def write_dataset(path: Path, count: int) -> Path:
    """Write `count` conversations to `path` (a LoCoMo-format JSON list)."""
    path.write_text(json.dumps([conversation(i) for i in range(count)], indent=1), encoding="utf-8")
    return path
