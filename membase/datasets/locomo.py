"""LoCoMo loader (spec §4.8, with the fixes of §7 item 11).

Reads both the official file (with `session_summary` / `observation`) and the shared copy that
lacks them: sessions come from the `conversation.session_<i>` keys. Malformed evidence ids are
repaired where the intent is clear (`"D8:6; D9:17"`, `"D:11:26"`, `"D30:05"`) and reported in
`MemoryDataset.issues`; nothing about evidence is fatal.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from membase.exceptions import DatasetError
from membase.types import MemoryDataset, Message, QuestionAnswerPair, Session, Trajectory

__all__ = ["NO_ANSWER", "QUESTION_TYPES", "load_locomo", "parse_evidence"]

logger = logging.getLogger(__name__)

LOCOMO_TIME_FORMAT = "%I:%M %p on %d %B, %Y"
NO_ANSWER = "Sorry, I don't know the answer of this question."
QUESTION_TYPES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_TOKEN = re.compile(r"D:?(\d+):(\d+)")


def parse_evidence(raw: Any) -> tuple[list[str], list[str]]:
    """Parse LoCoMo evidence into canonical dialogue ids `D<session>:<turn>`.

    Args:
        raw: the `evidence` field (normally a list of strings).

    Returns:
        `(ids, problems)`: the ids found (in order, deduplicated) and a description of each entry
        that needed repair or could not be parsed.
    """
    items = raw if isinstance(raw, list) else ([] if raw is None else [raw])
    ids: list[str] = []
    problems: list[str] = []
    for item in items:
        text = str(item).strip()
        found = [f"D{int(a)}:{int(b)}" for a, b in _EVIDENCE_TOKEN.findall(text)]
        if not found:
            problems.append(f"unparseable evidence {text!r} dropped")
            continue
        if found != [text]:
            problems.append(f"evidence {text!r} read as {found}")
        for dia_id in found:
            if dia_id not in ids:
                ids.append(dia_id)
    return ids, problems


def _parse_time(value: Any, where: str) -> str:
    try:
        return datetime.strptime(str(value).strip(), LOCOMO_TIME_FORMAT).isoformat()
    except ValueError as exc:
        raise DatasetError(f"{where}: date {value!r} does not match {LOCOMO_TIME_FORMAT!r}") from exc


def _session_numbers(sample: dict[str, Any]) -> list[int]:
    summaries = sample.get("session_summary")
    if isinstance(summaries, dict) and summaries:
        # The official file: the summaries define the sessions (one per `session_<i>_summary`).
        nums = sorted(int(m.group(1)) for k in summaries if (m := re.fullmatch(r"session_(\d+)_summary", k)))
        if nums:
            return nums
    conversation = sample["conversation"]
    return sorted(int(m.group(1)) for k in conversation if (m := _SESSION_KEY.fullmatch(k)))


def _build_messages(sample_idx: int, num: int, sample: dict[str, Any], when: str) -> list[Message]:
    conversation = sample["conversation"]
    speakers = {conversation["speaker_a"]: "speaker_a", conversation["speaker_b"]: "speaker_b"}
    messages = []
    for turn in conversation.get(f"session_{num}") or []:
        speaker = turn.get("speaker")
        if speaker not in speakers:
            raise DatasetError(
                f"LoCoMo sample {sample_idx} session {num}: unknown speaker {speaker!r} "
                f"(expected one of {sorted(speakers)})"
            )
        extra = {k: v for k, v in turn.items() if k not in ("speaker", "text")}
        messages.append(
            Message(
                id=f"U{sample_idx}:{turn['dia_id']}",
                name=speaker,
                content=str(turn.get("text", "")),
                role="user",
                timestamp=when,
                metadata={"speaker_tag": speakers[speaker], **extra},
            )
        )
    return messages


def _build_trajectory(sample_idx: int, sample: dict[str, Any]) -> Trajectory:
    conversation = sample["conversation"]
    summaries = sample.get("session_summary") or {}
    observations = sample.get("observation") or {}
    sessions = []
    for num in _session_numbers(sample):
        where = f"LoCoMo sample {sample_idx} session {num}"
        if f"session_{num}_date_time" not in conversation:
            raise DatasetError(f"{where}: missing conversation.session_{num}_date_time")
        when = _parse_time(conversation[f"session_{num}_date_time"], where)
        messages = _build_messages(sample_idx, num, sample, when)
        if not messages:
            logger.warning("%s has no messages; skipped", where)
            continue
        metadata: dict[str, Any] = {}
        if f"session_{num}_summary" in summaries:
            metadata["session_summary"] = summaries[f"session_{num}_summary"]
        if f"session_{num}_observation" in observations:
            metadata["session_observation"] = observations[f"session_{num}_observation"]
        sessions.append(Session(id=f"locomo-{sample_idx}-session-{num}", messages=messages, metadata=metadata))
    sessions.sort(key=lambda s: s.messages[0].time)
    return Trajectory(
        id=f"locomo-{sample_idx}",
        sessions=sessions,
        metadata={"speaker_a": conversation["speaker_a"], "speaker_b": conversation["speaker_b"]},
    )


def _build_qas(sample_idx: int, sample: dict[str, Any], traj: Trajectory, issues: list[str]) -> list[QuestionAnswerPair]:
    conversation = sample["conversation"]
    known_ids = {m.id for m in traj.messages}
    end = traj.sessions[-1].ended_at if traj.sessions else None
    qas = []
    for q_idx, raw in enumerate(sample.get("qa") or [], start=1):
        qa_id = f"locomo-qa-{sample_idx}-{q_idx}"
        answer = raw.get("answer")
        answer = NO_ANSWER if answer is None else str(answer)
        dia_ids, problems = parse_evidence(raw.get("evidence"))
        evidence = [f"U{sample_idx}:{d}" for d in dia_ids]
        issues.extend(f"{qa_id}: {p}" for p in problems)
        issues.extend(f"{qa_id}: evidence {e!r} names no message" for e in evidence if e not in known_ids)
        category = raw.get("category")
        metadata: dict[str, Any] = {
            "question_type": QUESTION_TYPES.get(category, str(category)),
            "category_id": category,
            "evidence": evidence,
            "speaker_names": [conversation["speaker_a"], conversation["speaker_b"]],
        }
        if "adversarial_answer" in raw:
            metadata["adversarial_answer"] = raw["adversarial_answer"]
        qas.append(
            QuestionAnswerPair(
                id=qa_id, question=str(raw.get("question", "")), golden_answers=[answer], timestamp=end,
                metadata=metadata,
            )
        )
    return qas


def load_locomo(path: str | Path) -> MemoryDataset:
    """Load a LoCoMo JSON file.

    Ids: messages `U{sample}:{dia_id}`, sessions `locomo-{sample}-session-{i}`, trajectories
    `locomo-{sample}`, questions `locomo-qa-{sample}-{q}` (sample and q are 1-based positions).

    Raises:
        DatasetError: the file is missing, not JSON, or lacks required keys.
    """
    path = Path(path)
    if path.is_dir():
        raise DatasetError(f"LoCoMo file {str(path)!r} is a folder; pass the path to locomo10.json")
    if not path.is_file():
        raise DatasetError(f"LoCoMo file {str(path)!r} not found; pass the path to locomo10.json")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise DatasetError(f"LoCoMo file {str(path)!r} is not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except OSError as exc:
        raise DatasetError(f"LoCoMo file {str(path)!r} cannot be read ({exc.strerror or exc})") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(f"LoCoMo file {str(path)!r} is not valid JSON ({exc})") from exc
    if not isinstance(raw, list):
        raise DatasetError(f"LoCoMo file {str(path)!r} must hold a JSON list of samples")
    trajectories, qa_lists, issues = [], [], []
    for sample_idx, sample in enumerate(raw, start=1):
        if not isinstance(sample, dict):
            raise DatasetError(
                f"LoCoMo sample {sample_idx} in {str(path)!r} is a JSON {type(sample).__name__}, not an object"
            )
        try:
            traj = _build_trajectory(sample_idx, sample)
            qa_lists.append(_build_qas(sample_idx, sample, traj, issues))
        except KeyError as exc:
            raise DatasetError(f"LoCoMo sample {sample_idx} in {str(path)!r} lacks key {exc}") from None
        except (TypeError, AttributeError) as exc:
            # a value of the wrong JSON type (a string where the layout has a list or an object)
            raise DatasetError(
                f"LoCoMo sample {sample_idx} in {str(path)!r} does not have the locomo10.json layout ({exc})"
            ) from None
        trajectories.append(traj)
    for issue in issues:
        logger.info("LoCoMo: %s", issue)
    if issues:
        logger.warning("LoCoMo: %d evidence problems in %s (see MemoryDataset.issues)", len(issues), path)
    return MemoryDataset(name="LoCoMo", trajectories=trajectories, qa_pair_lists=qa_lists, issues=issues)
