"""BFCL's multi-turn entries as typed tasks: turns of user messages over stateful APIs.

A multi-turn entry (``BFCL_v4_multi_turn_<kind>.json``) names the API classes
it involves (``involved_classes``) and their starting state
(``initial_config``); the functions it offers are those classes' function
docs (``multi_turn_func_doc/``), less ``excluded_function`` (never offered)
and ``missed_function`` (withheld until the turn that names them, whose user
message is empty in the data: BFCL then says it added functions). Its
possible answer (``possible_answer/``) is one list of calls per turn, each a
Python call as text (``cd(folder='document')``); an empty list is a turn the
model cannot do (a parameter or a function is missing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from aah.benchmark.bfcl.records import (
    function_problem,
    invalid_record,
    item_id,
    read_records,
    refuse_stray_answers,
)
from aah.benchmark.bfcl.tasks import (
    BFCL_SETTING,
    MULTI_TURN_CATEGORIES,
    BfclMessage,
    turn_text,
)
from aah.benchmark.when2call import When2CallTool, function_tool
from aah.errors import AahError

# The function docs of each API class (BFCL's own mapping), in multi_turn_func_doc/.
FUNC_DOC_FILES = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}
FUNC_DOC_FOLDER = "multi_turn_func_doc"
# What the user says on a turn that only adds the withheld functions (BFCL's words).
ADDED_FUNCTIONS_MESSAGE = "I have updated some more functions you can choose from. What about now?"
# Steps (model replies with calls) one turn may take before BFCL ends the entry.
TURN_STEP_LIMIT = 20
# A turn's calls at most, and a call's text at most, in a possible answer.
_MAX_TRUTH_CALLS = 200
_MAX_CALL_CHARS = 20_000


class MultiTurnTask(BaseModel):
    """One multi-turn BFCL entry, ready to run and to score.

    Attributes:
        id: The entry's id (``multi_turn_base_0``).
        setting: Always ``bfcl``: the sessions' setting in the store.
        category: One of ``MULTI_TURN_CATEGORIES``.
        language: Always ``en``.
        turns: Each turn's user messages, in order; a withheld-function turn
            has BFCL's "I have updated some more functions" message.
        functions: The functions offered from the first turn on.
        added: Functions offered from a later turn on, by turn index.
        involved_classes: The API classes the entry's functions belong to.
        initial_config: Each class's starting state.
        ground_truth: The right calls of each turn, as Python call text.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    setting: str = BFCL_SETTING
    category: str
    language: str = "en"
    turns: tuple[tuple[BfclMessage, ...], ...]
    functions: tuple[When2CallTool, ...]
    added: dict[int, tuple[When2CallTool, ...]] = {}
    involved_classes: tuple[str, ...]
    initial_config: dict[str, Any] = {}
    ground_truth: tuple[tuple[str, ...], ...]

    @property
    def long_context(self) -> bool:
        """Whether the APIs start with BFCL's long-context padding (the long_context category)."""
        return "long_context" in self.category

    @property
    def query(self) -> str:
        """The first turn's text (its messages as a transcript when there are several)."""
        return turn_text(self.turns[0])

    def follow_ups(self) -> list[str]:
        """The text of every turn after the first, in order."""
        return [turn_text(turn) for turn in self.turns[1:]]

    def functions_at(self, turn: int) -> list[When2CallTool]:
        """The functions offered on ``turn``: the first ones, and those added up to it."""
        offered = list(self.functions)
        for index in sorted(self.added):
            if index <= turn:
                offered += self.added[index]
        return offered


def is_multi_turn(category: str) -> bool:
    """Whether ``category`` is one of BFCL's multi-turn categories."""
    return category in MULTI_TURN_CATEGORIES


def multi_turn_source(source: Path) -> Path:
    """The BFCL v4 folder multi-turn entries are read from (``source``, a folder).

    Raises:
        AahError: ``source`` is a Multilingual-BFCL file, which holds no multi-turn entry.
    """
    if source.is_file():
        raise AahError(
            f"{source} holds single-turn items only: pass --data with a folder of "
            "BFCL_v4_*.json files (`aah data fetch bfcl`) for the multi-turn categories"
        )
    return source


def load_multi_turn(source: Path, categories: Sequence[str]) -> list[MultiTurnTask]:
    """The entries of the multi-turn ``categories`` in the BFCL folder ``source``.

    Raises:
        AahError: a file is missing, unreadable, or holds a malformed entry.
    """
    tasks: list[MultiTurnTask] = []
    for category in categories:
        path = source / f"BFCL_v4_{category}.json"
        if not path.is_file():
            raise AahError(f"no BFCL file at {path}: run `aah data fetch bfcl` or pass --data DIR")
        info = path.stat()
        tasks += _load(path.resolve(), info.st_mtime_ns, info.st_size)
    return tasks


def multi_turn_files(source: Path, categories: Sequence[str]) -> list[Path]:
    """The files a multi-turn run reads (for the run's data hash)."""
    paths = []
    for category in categories:
        paths.append(source / f"BFCL_v4_{category}.json")
        paths.append(source / "possible_answer" / f"BFCL_v4_{category}.json")
    paths += [source / FUNC_DOC_FOLDER / name for name in sorted(set(FUNC_DOC_FILES.values()))]
    return [path for path in paths if path.is_file()]


@lru_cache(maxsize=8)
def _load(path: Path, mtime_ns: int, size: int) -> tuple[MultiTurnTask, ...]:
    category = path.stem.removeprefix("BFCL_v4_")
    answer_file = path.parent / "possible_answer" / path.name
    if not answer_file.is_file():
        raise AahError(f"no possible answers at {answer_file}: fetch the data again")
    answers: dict[str, tuple[str, tuple[tuple[str, ...], ...]]] = {}
    for record in read_records(answer_file):
        answer_id = item_id(record)
        if answer_id in answers:
            raise AahError(
                f"{record.where}: a second possible answer for {answer_id}: fix the data file"
            )
        answers[answer_id] = (record.where, _truth(record.value.get("ground_truth"), record.where))
    docs = _func_docs(path.parent / FUNC_DOC_FOLDER)
    tasks = []
    seen: set[str] = set()
    for record in read_records(path):
        entry_id = item_id(record)
        if entry_id in seen:
            raise AahError(f"{record.where}: entry id {entry_id} repeats: fix the data file")
        seen.add(entry_id)
        answer = answers.get(entry_id)
        if answer is None:
            raise AahError(
                f"{record.where}: no possible answer for {entry_id}: fetch the data again"
            )
        tasks.append(_task(record.value, record.where, category, answer[1], docs))
    refuse_stray_answers(answers, seen, path)
    return tuple(tasks)


def _func_docs(folder: Path) -> dict[str, list[dict[str, Any]]]:
    docs: dict[str, list[dict[str, Any]]] = {}
    for class_name, name in FUNC_DOC_FILES.items():
        path = folder / name
        if not path.is_file():
            raise AahError(f"no function docs at {path}: run `aah data fetch bfcl` again")
        functions = []
        for record in read_records(path):
            problem = function_problem(record.value)
            if problem is not None:
                raise AahError(f"{record.where}: {problem}: fix the data file")
            functions.append(record.value)
        docs[class_name] = functions
    return docs


def _truth(value: Any, where: str) -> tuple[tuple[str, ...], ...]:
    if not isinstance(value, list) or not value:
        raise AahError(f"{where}: ground_truth must be a list of turns: fix the data file")
    turns = []
    for turn in value:
        if (
            not isinstance(turn, list)
            or len(turn) > _MAX_TRUTH_CALLS
            or not all(isinstance(c, str) and 0 < len(c) <= _MAX_CALL_CHARS for c in turn)
        ):
            raise AahError(
                f"{where}: each turn of ground_truth must be a list of calls as text: "
                "fix the data file"
            )
        turns.append(tuple(turn))
    return tuple(turns)


def _names(value: Any, where: str, field: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise AahError(f"{where}: {field} must be a list of function names: fix the data file")
    return value


def _task(
    value: Mapping[str, Any],
    where: str,
    category: str,
    truth: tuple[tuple[str, ...], ...],
    docs: Mapping[str, list[dict[str, Any]]],
) -> MultiTurnTask:
    classes = _names(value.get("involved_classes"), where, "involved_classes")
    unknown = [name for name in classes if name not in docs]
    if not classes or unknown:
        raise AahError(
            f"{where}: involved_classes must name BFCL's APIs ({', '.join(FUNC_DOC_FILES)}), "
            f"not {', '.join(unknown) or 'nothing'}: fix the data file"
        )
    question = value.get("question")
    if not isinstance(question, list) or not question or len(question) != len(truth):
        raise AahError(
            f"{where}: question must be a list of turns, as many as ground_truth has: "
            "fix the data file"
        )
    excluded = set(_names(value.get("excluded_function"), where, "excluded_function"))
    missed_raw = value.get("missed_function") or {}
    if not isinstance(missed_raw, Mapping):
        raise AahError(f"{where}: missed_function must map turns to names: fix the data file")
    missed: dict[int, list[str]] = {}
    for turn, names in missed_raw.items():
        if not str(turn).isdigit() or not 0 < int(turn) < len(question):
            raise AahError(f"{where}: missed_function names turn {turn!r}: fix the data file")
        missed[int(turn)] = _names(names, where, "missed_function")
    withheld = {name for names in missed.values() for name in names}
    by_name: dict[str, dict[str, Any]] = {}
    for class_name in classes:
        for doc in docs[class_name]:
            by_name[doc["name"]] = doc
    unknown = sorted(withheld - set(by_name))
    if unknown:
        raise AahError(f"{where}: missed_function names {', '.join(unknown)}: fix the data file")
    offered = [
        function_tool(doc, where)
        for name, doc in by_name.items()
        if name not in excluded and name not in withheld
    ]
    added = {
        turn: tuple(function_tool(by_name[name], where) for name in names if name not in excluded)
        for turn, names in missed.items()
    }
    turns = []
    for index, messages in enumerate(question):
        if not isinstance(messages, list):
            raise AahError(f"{where}: turn {index} must be a list of messages: fix the data file")
        if not messages:
            if index not in missed:
                raise AahError(
                    f"{where}: turn {index} has no message and adds no function: fix the data file"
                )
            messages = [{"role": "user", "content": ADDED_FUNCTIONS_MESSAGE}]
        turns.append(messages)
    config = value.get("initial_config") or {}
    if not isinstance(config, Mapping):
        raise AahError(f"{where}: initial_config must be an object: fix the data file")
    try:
        return MultiTurnTask(
            id=str(value["id"]),
            category=category,
            turns=tuple(tuple(BfclMessage.model_validate(m) for m in turn) for turn in turns),
            functions=tuple(offered),
            added=added,
            involved_classes=tuple(classes),
            initial_config=dict(config),
            ground_truth=truth,
        )
    except ValidationError as exc:
        raise invalid_record(exc, where, "entry") from exc
