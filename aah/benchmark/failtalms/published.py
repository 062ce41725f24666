"""The published Fail-TaLMs answers files, read record by record, leniently.

A file of ``outputs/<Setting>/<model>/answers.json`` (science.md §5) is a
list of objects. The published files are not uniform: ``model_answer`` may
be absent, null or a JSON structure, a ``query_id`` may repeat (a task run
and appended again), a field may have another type. The paper counts every
record, so every record is read: what is odd about one is noted in its
``anomalies`` (keys of ``ANOMALIES``) instead of refusing it. Only a file
that is no list of objects at all is refused.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from aah.errors import AahError
from aah.events import AwarenessAnswer, AwarenessQuestion
from aah.llm import parse_awareness_reply
from aah.peer_read import PeerBound, PeerOutOfBounds, parse_json, read_file

# Positions or ids a warning lists before it says "and N more".
LISTED = 8

# What an odd record was, and what the import did with it.
ANOMALIES = {
    "answer_missing": "model_answer absent or null (not skipped): imported as an empty answer",
    "answer_not_text": "model_answer not a string: kept as its JSON text",
    "query_missing": "query absent or null: imported as an empty query",
    "query_not_text": "query not a string: kept as its JSON text",
    "query_id_missing": "no query_id: keyed by its position",
    "info_annotation_unparsed": "an information annotation not yes/idk/no: recorded as none",
    "tool_annotation_unparsed": "a tool annotation that is not yes/idk/no: recorded as none",
    "field_unreadable": "a field of the wrong type (skipped, scores, annotations, interactions): "
    "ignored",
}


class InteractionScore(NamedTuple):
    """One question the model asked a person, the reply, and its 0/1 score."""

    question: str
    user_response: str
    score: object


class PublishedAwareness(NamedTuple):
    """One awareness question's published annotation, as parsed."""

    question: AwarenessQuestion
    answer: AwarenessAnswer
    text: str


@dataclass(frozen=True)
class PublishedAnswer:
    """One record of a published ``answers.json``, read leniently.

    Attributes:
        position: Its index in the file's list, from 0.
        query_id: As published, as text; None when absent.
        first_position: Where the same ``query_id`` first appears in the
            file, when this record repeats it; else None.
        anomalies: What was odd about it (keys of ``ANOMALIES``).
    """

    position: int
    query_id: str | None
    query: str
    skipped: bool
    pass_rate: float | None
    win_rate: float | None
    model_answer: str
    awareness: tuple[PublishedAwareness, ...]
    interaction_scores: tuple[InteractionScore, ...]
    first_position: int | None = None
    anomalies: tuple[str, ...] = ()

    def task_id(self, setting: str) -> str:
        """The session's task id: stable across imports of the same file."""
        if self.query_id is None:
            return f"{setting}-@{self.position}"
        if self.first_position is not None:
            return f"{setting}-{self.query_id}@{self.position}"
        return f"{setting}-{self.query_id}"

    @property
    def label(self) -> str:
        """How a warning names the record."""
        return f"query {self.query_id}" if self.query_id is not None else f"@{self.position}"


# The most one published answers file may hold (the paper's largest is about 30 MB).
MAX_ANSWERS_FILE_BYTES = 512 * 1024 * 1024


def read_answers(path: Path) -> list[PublishedAnswer]:
    """Every record of one published answers file, odd ones included.

    Raises:
        AahError: The file cannot be read, is not JSON, is not a list, or
            holds a record that is not an object.
    """
    bound = PeerBound(str(path), MAX_ANSWERS_FILE_BYTES, verb="holds")
    try:
        data = parse_json(read_file(path, bound).decode("utf-8"), bound)
    except PeerOutOfBounds as exc:
        raise AahError(f"{exc}: split the file or check it holds published answers") from None
    except OSError as exc:
        raise AahError(f"{path} cannot be read ({exc.strerror or exc}): check it") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AahError(f"{path} is not JSON ({exc}): fix or remove it") from exc
    if not isinstance(data, list):
        raise AahError(
            f"{path} holds a JSON {_json_kind(data)}, not a list of answers: fix or remove it"
        )
    for position, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise AahError(
                f"{path}: record {position} is a JSON {_json_kind(entry)}, not an object: "
                "fix or remove the file"
            )
    answers: list[PublishedAnswer] = []
    first_seen: dict[str, int] = {}
    for position, entry in enumerate(data):
        answer = _read_record(position, entry)
        if answer.query_id is not None:
            first = first_seen.setdefault(answer.query_id, position)
            if first != position:
                answer = replace(answer, first_position=first)
        answers.append(answer)
    return answers


def _read_record(position: int, entry: Mapping[str, Any]) -> PublishedAnswer:
    odd: list[str] = []
    query_id = entry.get("query_id")
    if isinstance(query_id, str | int) and not isinstance(query_id, bool) and str(query_id):
        key: str | None = str(query_id).strip()
    else:
        key = None
        odd.append("query_id_missing" if query_id in (None, "") else "field_unreadable")
    query = _text(entry.get("query"), "query", odd)
    skipped = _flag(entry.get("skipped"), odd)
    answer = entry.get("model_answer")
    # A skipped task was never attempted: no answer is what it should have.
    final = "" if skipped and answer is None else _text(answer, "answer", odd)
    pass_rate, win_rate = _score(entry.get("pass_rate"), odd), _score(entry.get("win_rate"), odd)
    awareness = _awareness(entry, odd)
    scores = _interactions(entry.get("interaction_scores"), odd)
    return PublishedAnswer(
        position=position,
        query_id=key,
        query=query,
        skipped=skipped,
        pass_rate=pass_rate,
        win_rate=win_rate,
        model_answer=final,
        awareness=awareness,
        interaction_scores=scores,
        anomalies=tuple(dict.fromkeys(odd)),
    )


def _text(value: object, name: str, odd: list[str]) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        odd.append(f"{name}_missing")
        return ""
    odd.append(f"{name}_not_text")
    return json.dumps(value, ensure_ascii=False)


def _flag(value: object, odd: list[str]) -> bool:
    if value is None or isinstance(value, bool):
        return bool(value)
    if value in (0, 1) or (isinstance(value, str) and value.strip().lower() in ("true", "false")):
        return value in (1, True) or str(value).strip().lower() == "true"
    odd.append("field_unreadable")
    return False


def _score(value: object, odd: list[str]) -> float | None:
    if value is None:
        return None
    score = math.nan
    if isinstance(value, int | float):
        score = float(value)
    elif isinstance(value, str):  # a number written as text
        try:
            score = float(value)
        except ValueError:
            pass
    if math.isfinite(score):
        return score
    odd.append("field_unreadable")
    return None


def _awareness(entry: Mapping[str, Any], odd: list[str]) -> tuple[PublishedAwareness, ...]:
    found: list[PublishedAwareness] = []
    questions: tuple[tuple[AwarenessQuestion, str], ...] = (
        ("information", "info"),
        ("tool", "tool"),
    )
    for question, prefix in questions:
        annotation, reason = entry.get(f"{prefix}_annotation"), entry.get(f"{prefix}_awareness")
        if not isinstance(annotation, str | None) or not isinstance(reason, str | None):
            odd.append("field_unreadable")
            annotation = annotation if isinstance(annotation, str) else None
            reason = reason if isinstance(reason, str) else None
        if annotation is None and reason is None:
            continue
        # An annotation decides; only without one is the reason text read, from its start.
        parsed = parse_awareness_reply(annotation if annotation is not None else reason or "")
        if parsed is None:
            odd.append(f"{prefix}_annotation_unparsed")
        answer: AwarenessAnswer = parsed[0] if parsed is not None else "none"
        found.append(PublishedAwareness(question, answer, reason or annotation or ""))
    return tuple(found)


def _interactions(value: object, odd: list[str]) -> tuple[InteractionScore, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    scores = []
    for item in items:
        question = item.get("question") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(question, str):
            odd.append("field_unreadable")
            continue
        reply = item.get("user_response")
        text = reply if isinstance(reply, str) else "" if reply is None else json.dumps(reply)
        scores.append(InteractionScore(question, text, item.get("score")))
    return tuple(scores)


def _json_kind(value: object) -> str:
    kinds = {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}
    return kinds.get(type(value), "number")


def odd_record_warnings(path: Path, answers: Sequence[PublishedAnswer]) -> list[str]:
    """One warning per kind of odd record in the file, naming the records."""
    lines = []
    if not answers:
        lines.append(f"{path} holds no records")
    repeats = [a for a in answers if a.first_position is not None]
    if repeats:
        ids = Counter(a.query_id for a in repeats)
        named = _listed([f"query {qid} x{n + 1}" for qid, n in ids.items()])
        verb = "record repeats" if len(repeats) == 1 else "records repeat"
        lines.append(
            f"{path}: {len(repeats)} {verb} a query_id of the file ({named}): "
            "each is imported as a session of its own and counted"
        )
    for kind, description in ANOMALIES.items():
        odd = [a.label for a in answers if kind in a.anomalies]
        if odd:
            noun = "record" if len(odd) == 1 else "records"
            lines.append(f"{path}: {len(odd)} {noun} with {description} ({_listed(odd)})")
    return lines


def _listed(names: Sequence[str]) -> str:
    more = f" and {len(names) - LISTED} more" if len(names) > LISTED else ""
    return ", ".join(names[:LISTED]) + more
