"""How a session's questions read against its task's blockers (science.md §8): both readings.

Each row is one question (by the seq of the event that holds it) and one
blocker (by its id within the task): the rules' reading (yes, or None where
they cannot say) and the majority-vote grader's (yes, no, or None where it
was not asked), with the grader's votes and why its reading is flagged. The
report reads them back; a row written again (a grader asked again) replaces
the one before.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from aah.store import schema as schema
from aah.store.connection import StoreConnection


class AskReading(BaseModel):
    """One question read against one blocker.

    Attributes:
        session_id: The session.
        question_seq: The seq of the event holding the question.
        blocker: The blocker's id within the task (``param:date``, ``span:0``).
        rules: True when the rules read it as asking for the blocker; None: they cannot say.
        grader: The grader's reading; None when it was not asked (or had no quorum).
        grader_model: The grader's model, when asked.
        prompt_version: Its prompt's version, when asked.
        votes: Its votes: ``{round, raw, vote}``, invalid ones too.
        flag: ``no_quorum`` or ``tie`` when the grader's reading is flagged.
    """

    model_config = ConfigDict(frozen=True)

    session_id: str
    question_seq: int
    blocker: str
    rules: bool | None = None
    grader: bool | None = None
    grader_model: str | None = None
    prompt_version: str | None = None
    votes: list[dict[str, Any]] = Field(default_factory=list)
    flag: str | None = None


def _flag(value: bool | None) -> int | None:
    return None if value is None else int(value)


class AskReadings:
    """The ``ask_readings`` table of one session database.

    Args:
        connection: The database's connections, shared with the rest of the store.
    """

    def __init__(self, connection: StoreConnection) -> None:
        self._connection = connection

    def save(self, readings: Sequence[AskReading]) -> None:
        """Store ``readings``, each replacing any row for the same question and blocker."""
        if not readings:
            return
        with self._connection.write() as db:
            for reading in readings:
                db.execute(
                    "INSERT INTO ask_readings (session_id, question_seq, blocker, rules, grader,"
                    " grader_model, prompt_version, votes, flag, created)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (session_id, question_seq, blocker) DO UPDATE SET"
                    " rules = excluded.rules, grader = excluded.grader,"
                    " grader_model = excluded.grader_model,"
                    " prompt_version = excluded.prompt_version, votes = excluded.votes,"
                    " flag = excluded.flag, created = excluded.created",
                    [
                        reading.session_id,
                        reading.question_seq,
                        reading.blocker,
                        _flag(reading.rules),
                        _flag(reading.grader),
                        reading.grader_model,
                        reading.prompt_version,
                        schema.to_json(reading.votes),
                        reading.flag,
                        schema.now_text(),
                    ],
                )

    def of_sessions(self, session_ids: Sequence[str]) -> list[AskReading]:
        """Every reading of the sessions ``session_ids``, by session, question and blocker."""
        found: list[AskReading] = []
        for start in range(0, len(session_ids), 500):
            chunk = list(session_ids[start : start + 500])
            marks = ", ".join("?" for _ in chunk)
            rows = self._connection.rows(
                "SELECT session_id, question_seq, blocker, rules, grader, grader_model,"
                f" prompt_version, votes, flag FROM ask_readings WHERE session_id IN ({marks})"
                " ORDER BY session_id, question_seq, blocker",
                chunk,
            )
            found += [
                AskReading(
                    session_id=row["session_id"],
                    question_seq=row["question_seq"],
                    blocker=row["blocker"],
                    rules=None if row["rules"] is None else bool(row["rules"]),
                    grader=None if row["grader"] is None else bool(row["grader"]),
                    grader_model=row["grader_model"],
                    prompt_version=row["prompt_version"],
                    votes=json.loads(row["votes"] or "[]"),
                    flag=row["flag"],
                )
                for row in rows
            ]
        return found
