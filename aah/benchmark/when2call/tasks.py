"""The When2Call test questions as typed tasks.

The data file (``when2call/when2call_test_questions.jsonl``, see the data
manifest) holds 300 questions, 100 for each right behaviour: call a tool,
ask a follow-up question, or say it cannot be done. Each becomes a task with
the fields a run needs: the question, the tools offered (as specs with valid
names), the gold behaviour and the tool a right call uses.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from aah.benchmark.when2call.tools import When2CallTool, parse_tool, tool_name
from aah.errors import AahError
from aah.peer_read import PeerBound, PeerOutOfBounds, read_file

WHEN2CALL_FOLDER = "when2call"
QUESTIONS_FILE = "when2call_test_questions.jsonl"
# The setting a When2Call session is stored under (Fail-TaLMs has five of its own).
WHEN2CALL_SETTING = "when2call"
GoldBehavior = Literal["tool_call", "request_for_info", "cannot_answer"]
GOLD_BEHAVIORS: tuple[GoldBehavior, ...] = ("tool_call", "request_for_info", "cannot_answer")


class When2CallTask(BaseModel):
    """One When2Call question, ready to run.

    Attributes:
        id: ``when2call-<first 8 hex digits of the uuid>``, stable across loads.
        setting: Always ``when2call``: the sessions' setting in the store.
        uuid: The question's uuid in the published file.
        source: The BFCL split it comes from (``BFCL v2 Live Multiple``...).
        source_id: Its id in that split.
        query: The user's request.
        gold: The right behaviour (``correct_answer``).
        target_tool: The BFCL name of the question's target tool: the one a
            right call uses (``tool_call`` questions), or the one the missing
            information is for (``request_for_info``); None for ``cannot_answer``.
        tools: The tools offered, in data order (none for 17 questions).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    setting: str = WHEN2CALL_SETTING
    uuid: str
    source: str
    source_id: str
    query: str
    gold: GoldBehavior
    target_tool: str | None
    tools: tuple[When2CallTool, ...]

    @property
    def target_tool_name(self) -> str | None:
        """The valid tool name of ``target_tool``: what a right call names."""
        return tool_name(self.target_tool) if self.target_tool else None


class _Record(BaseModel):
    """One line of the data file, as published (``answers`` left out)."""

    uuid: str
    source: str
    source_id: str
    question: str
    correct_answer: GoldBehavior
    target_tool: str | None = None
    tools: list[str]


def questions_file(data_dir: Path) -> Path:
    """The When2Call questions file under a data directory."""
    return data_dir / WHEN2CALL_FOLDER / QUESTIONS_FILE


def load_when2call(data_dir: Path) -> list[When2CallTask]:
    """Every When2Call question of a data directory, in file order.

    Raises:
        AahError: the file is missing, or a line is not a When2Call question.
    """
    path = questions_file(data_dir)
    if not path.is_file():
        raise AahError(f"no When2Call questions at {path}: run `aah data fetch` or pass --data DIR")
    info = path.stat()
    return list(_load(path.resolve(), info.st_mtime_ns, info.st_size))


# When2Call's file is about 1 MB; a hundred times that is no question file.
MAX_QUESTIONS_FILE_BYTES = 128 * 1024 * 1024


@lru_cache(maxsize=4)
def _load(path: Path, mtime_ns: int, size: int) -> tuple[When2CallTask, ...]:
    try:
        raw = read_file(path, PeerBound(str(path), MAX_QUESTIONS_FILE_BYTES, verb="holds"))
        lines = raw.decode("utf-8").splitlines()
    except PeerOutOfBounds as exc:
        raise AahError(f"{exc}: fetch the data again") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AahError(f"cannot read {path} ({exc}): fetch the data again") from exc
    tasks: list[When2CallTask] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        task = parse_question(line, f"{path}:{number}")
        if task.id in seen:
            raise AahError(
                f"{path}:{number}: task id {task.id} repeats line {seen[task.id]}: "
                "fetch the data again"
            )
        seen[task.id] = number
        tasks.append(task)
    return tuple(tasks)


def parse_question(line: str, where: str) -> When2CallTask:
    """One line of the data file as a task.

    Raises:
        AahError: the line is not a When2Call question, a tool name cannot be
            mapped, or two tools of the question map to one name.
    """
    try:
        record = _Record.model_validate_json(line)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "line"
        raise AahError(f"{where}: {field}: {first['msg']}: fetch the data again") from exc
    tools = tuple(parse_tool(text, where) for text in record.tools)
    names = [tool.name for tool in tools]
    if len(set(names)) != len(names):
        raise AahError(f"{where}: two tools share the name {_repeated(names)}: fix the data file")
    # Published as the target's whole schema, a JSON string like each tool.
    target = parse_tool(record.target_tool, where).original if record.target_tool else None
    if target is not None and target not in {tool.original for tool in tools}:
        raise AahError(f"{where}: target_tool {target!r} is not offered: fix the data file")
    return When2CallTask(
        id=f"when2call-{record.uuid.replace('-', '')[:8]}",
        uuid=record.uuid,
        source=record.source,
        source_id=record.source_id,
        query=record.question,
        gold=record.correct_answer,
        target_tool=target,
        tools=tools,
    )


def _repeated(names: list[str]) -> str:
    return next(name for name in names if names.count(name) > 1)


def task_json(task: When2CallTask) -> str:
    """A task as one JSON line (for ``aah bench data``-like listings and tests)."""
    return json.dumps(task.model_dump(mode="json"), ensure_ascii=False)
