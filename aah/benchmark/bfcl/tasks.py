"""BFCL's single-turn items as typed tasks, from BFCL v4 files or Multilingual-BFCL JSONL.

Two layouts hold the same items:

- BFCL v4 (``bfcl/BFCL_v4_<category>.json``, one JSON object a line, with
  ``possible_answer/BFCL_v4_<category>.json`` beside it for the AST
  categories): ``id``, ``question`` (turns of messages), ``function``;
- Multilingual-BFCL (``bfcl_single_turn_<lang>.jsonl``): the same fields plus
  ``subset``, ``language``, ``test_category`` and ``ground_truth`` inline.

Each item becomes a ``BfclTask``: its category, language, the conversation
the model reads, the functions offered (names made valid reversibly, types in
JSON Schema) and the possible answers the AST checker reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from aah.benchmark.bfcl.records import (
    Record,
    function_problem,
    ground_truth_problem,
    invalid_record,
    item_id,
    read_records,
    refuse_stray_answers,
)
from aah.benchmark.bfcl.source_values import LANGUAGE_TYPES
from aah.benchmark.when2call import When2CallTool, function_tool
from aah.errors import AahError

BFCL_FOLDER = "bfcl"
BFCL_SETTING = "bfcl"
# The categories the checker scores. Java and JavaScript items carry their
# values as source text in those languages (``SOURCE_LANGUAGES``).
AST_CATEGORIES = (
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
REFUSAL_CATEGORIES = ("irrelevance", "live_irrelevance")
RELEVANCE_CATEGORIES = ("live_relevance",)
CATEGORIES = AST_CATEGORIES + REFUSAL_CATEGORIES + RELEVANCE_CATEGORIES
ALL_SINGLE_TURN = "all-single-turn"
# Conversations over BFCL's stateful APIs (``multi_turn_tasks``).
MULTI_TURN_CATEGORIES = (
    "multi_turn_base",
    "multi_turn_miss_param",
    "multi_turn_miss_func",
    "multi_turn_long_context",
)
ALL_MULTI_TURN = "all-multi-turn"
# The categories whose values the model writes as source text, and their language.
SOURCE_LANGUAGES = {"simple_java": "java", "simple_javascript": "javascript"}
# Multilingual-BFCL (after BFCL v3) names some categories more coarsely.
_SUBSET_CATEGORY = {
    "simple": "simple_python",
    "java": "simple_java",
    "javascript": "simple_javascript",
}
# A v3 ``simple`` item in Java or JavaScript, told by its id's start
# (``simple_javascript`` before ``simple_java``, which starts it too).
_ID_CATEGORY = (
    ("simple_javascript", "simple_javascript"),
    ("javascript_", "simple_javascript"),
    ("simple_java", "simple_java"),
    ("java_", "simple_java"),
)
MBFCL_PATTERN = "bfcl_single_turn_*.jsonl"
# An MBFCL item's language: a code such as ``en``, ``vi``, ``th`` or ``pt-BR``.
_LANGUAGE = re.compile(r"[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*")

# One acceptable call: {function name: {argument: [acceptable values]}}.
PossibleCall = dict[str, dict[str, list[Any]]]


class BfclMessage(BaseModel):
    """One message of an item's conversation."""

    model_config = ConfigDict(frozen=True)

    role: str
    content: str


class BfclTask(BaseModel):
    """One single-turn BFCL item, ready to run and to score.

    Attributes:
        id: The item's id (``simple_python_12``; MBFCL ids carry the language).
        setting: Always ``bfcl``: the sessions' setting in the store.
        category: BFCL's test category (one of ``CATEGORIES``).
        language: ``en`` for BFCL's own files; MBFCL's ``language`` otherwise.
        messages: The conversation the model reads (system, earlier turns, the request).
        functions: The functions offered, with valid names (``tool_name``); in
            Java and JavaScript items every parameter is offered as a string
            of source text.
        ground_truth: The possible answers (AST categories), by BFCL function name.
        declared_types: Java and JavaScript items: each function's parameters'
            declared types, ``{function: {parameter: (type, element type)}}``,
            by which the checker reads the source text back.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    setting: str = BFCL_SETTING
    category: str
    language: str = "en"
    messages: tuple[BfclMessage, ...]
    functions: tuple[When2CallTool, ...]
    ground_truth: tuple[PossibleCall, ...] = ()
    declared_types: dict[str, dict[str, tuple[str, str | None]]] = Field(default_factory=dict)

    @property
    def source_language(self) -> str | None:
        """``java`` or ``javascript`` where values are written as source text; else None."""
        return SOURCE_LANGUAGES.get(self.category)

    @property
    def query(self) -> str:
        """The text the session starts with: the request, with what came before it.

        An aah session starts from one user message; an item with a system
        message or earlier turns is written out as a transcript, each message
        under its role, so the model reads all of it.
        """
        return turn_text(self.messages)


def turn_text(messages: Sequence[BfclMessage]) -> str:
    """Messages as the text of one user turn: the one message, or a transcript of several."""
    if len(messages) == 1:
        return messages[0].content
    return "\n\n".join(f"{m.role.capitalize()}: {m.content}" for m in messages)


def parse_categories(value: str) -> list[str]:
    """A comma list of category names, ``all-single-turn`` and ``all-multi-turn``, in order.

    Raises:
        AahError: an unknown or unsupported category.
    """
    groups = {ALL_SINGLE_TURN: CATEGORIES, ALL_MULTI_TURN: MULTI_TURN_CATEGORIES}
    named = [part.strip() for part in value.split(",") if part.strip()]
    chosen = list(dict.fromkeys(c for name in named for c in groups.get(name, (name,))))
    known = (*CATEGORIES, *MULTI_TURN_CATEGORIES)
    unknown = [name for name in chosen if name not in known]
    if unknown or not chosen:
        raise AahError(
            f"unknown --category {', '.join(unknown) or value!r}: use {ALL_SINGLE_TURN}, "
            f"{ALL_MULTI_TURN} or a comma list of {', '.join(known)}"
        )
    return chosen


def bfcl_source(data: Path) -> Path:
    """Where a run's items come from: an MBFCL file, or a folder of BFCL or MBFCL files.

    ``data`` may be an MBFCL ``.jsonl`` file, a folder holding MBFCL files, a
    folder holding ``BFCL_v4_*.json`` files, or a data directory with a
    ``bfcl`` folder.

    Raises:
        AahError: none of these is there.
    """
    if data.is_file():
        return data
    for folder in (data, data / BFCL_FOLDER):
        if folder.is_dir() and (
            any(folder.glob("BFCL_v4_*.json")) or any(folder.glob(MBFCL_PATTERN))
        ):
            return folder
    raise AahError(
        f"no BFCL data at {data}: run `aah data fetch bfcl`, or pass --data with a folder "
        f"of BFCL_v4_*.json files or a Multilingual-BFCL {MBFCL_PATTERN} file"
    )


def load_bfcl(source: Path, categories: Sequence[str]) -> list[BfclTask]:
    """The items of ``categories`` from ``source`` (see ``bfcl_source``), category by category.

    Raises:
        AahError: a file is missing, unreadable, or holds a line that is not an item.
    """
    files = _mbfcl_files(source)
    if files:
        items = [task for path in files for task in _cached(path, _load_mbfcl)]
        return [task for category in categories for task in items if task.category == category]
    tasks: list[BfclTask] = []
    for category in categories:
        tasks += _cached(source / f"BFCL_v4_{category}.json", _load_bfcl_v4)
    return tasks


def data_files(source: Path, categories: Sequence[str]) -> list[Path]:
    """The files a run over ``categories`` reads (for the run's data hash)."""
    files = _mbfcl_files(source)
    if files:
        return files
    paths = []
    for category in categories:
        paths.append(source / f"BFCL_v4_{category}.json")
        answers = source / "possible_answer" / f"BFCL_v4_{category}.json"
        if answers.is_file():
            paths.append(answers)
    return paths


def _mbfcl_files(source: Path) -> list[Path]:
    if source.is_file():
        return [source]
    return sorted(source.glob(MBFCL_PATTERN))


def _cached(path: Path, load: Any) -> tuple[BfclTask, ...]:
    if not path.is_file():
        raise AahError(f"no BFCL file at {path}: run `aah data fetch bfcl` or pass --data DIR")
    info = path.stat()
    result: tuple[BfclTask, ...] = load(path.resolve(), info.st_mtime_ns, info.st_size)
    return result


@lru_cache(maxsize=32)
def _load_bfcl_v4(path: Path, mtime_ns: int, size: int) -> tuple[BfclTask, ...]:
    category = path.stem.removeprefix("BFCL_v4_")
    answers: dict[str, tuple[str, list[Any]]] = {}  # id: (where, ground truth)
    answer_file = path.parent / "possible_answer" / path.name
    if category in AST_CATEGORIES:
        if not answer_file.is_file():
            raise AahError(f"no possible answers at {answer_file}: fetch the data again")
        for line in read_records(answer_file):
            answer_id = item_id(line)
            if answer_id in answers:
                raise AahError(
                    f"{line.where}: a second possible answer for {answer_id}: fix the data file"
                )
            answers[answer_id] = (line.where, _ground_truth(line.value, line.where))
    tasks = []
    seen: set[str] = set()
    for record in read_records(path):
        record_id = _new_id(record, seen)
        answer = answers.get(record_id)
        if category in AST_CATEGORIES and answer is None:
            raise AahError(
                f"{record.where}: no possible answer for {record_id}: fetch the data again"
            )
        task = _task(record, category, "en", answer[1] if answer is not None else [])
        if answer is not None:
            _check_answer_names(task, answer[0])
        tasks.append(task)
    refuse_stray_answers(answers, seen, path)
    return tuple(tasks)


@lru_cache(maxsize=8)
def _load_mbfcl(path: Path, mtime_ns: int, size: int) -> tuple[BfclTask, ...]:
    tasks = []
    seen: set[str] = set()
    for record in read_records(path):
        _new_id(record, seen)
        category = _mbfcl_category(record.value)
        if category not in CATEGORIES:
            continue  # a category aah does not run (multi-turn, agentic)
        language = record.value.get("language") or "en"
        if not isinstance(language, str) or not _LANGUAGE.fullmatch(language):
            raise AahError(
                f"{record.where}: 'language' must be a language code such as en, vi or th: "
                "fix the data file"
            )
        truth = _ground_truth(record.value, record.where) if category in AST_CATEGORIES else []
        task = _task(record, category, language, truth)
        if truth:
            _check_answer_names(task, record.where)
        tasks.append(task)
    return tuple(tasks)


def _new_id(record: Record, seen: set[str]) -> str:
    """The record's id, refused when an earlier line of the file has it."""
    record_id = item_id(record)
    if record_id in seen:
        raise AahError(f"{record.where}: item id {record_id} repeats: fix the data file")
    seen.add(record_id)
    return record_id


def _mbfcl_category(record: Mapping[str, Any]) -> str:
    subset = str(record.get("test_category") or record.get("subset") or "")
    category = _SUBSET_CATEGORY.get(subset, subset)
    if category == "simple_python":
        record_id = str(record.get("id"))
        return next((c for prefix, c in _ID_CATEGORY if record_id.startswith(prefix)), category)
    return category


def _ground_truth(record: Mapping[str, Any], where: str) -> list[Any]:
    truth = record.get("ground_truth")
    problem = ground_truth_problem(truth)
    if problem is not None:
        raise AahError(f"{where}: ground_truth {problem}: fix the data file")
    assert isinstance(truth, list)
    return truth


def _check_answer_names(task: BfclTask, where: str) -> None:
    """Refuse a possible answer that calls a function its item does not offer."""
    offered = {tool.original for tool in task.functions}
    for call in task.ground_truth:
        name = next(iter(call))
        if name not in offered:
            raise AahError(
                f"{where}: ground_truth calls {name!r}, which item {task.id} does not offer: "
                "fix the data file"
            )


def _task(record: Record, category: str, language: str, truth: list[Any]) -> BfclTask:
    where = record.where
    question = record.value.get("question")
    turns = question if isinstance(question, list) else []
    messages = turns[0] if turns and isinstance(turns[0], list) else []
    functions = record.value.get("function")
    if not messages or not isinstance(functions, list):
        raise AahError(f"{where}: an item needs a question and a function list: fix the data file")
    problem = next((p for f in functions if (p := function_problem(f)) is not None), None)
    if problem is not None:
        raise AahError(f"{where}: {problem}: fix the data file")
    language_of_values = SOURCE_LANGUAGES.get(category)
    declared: dict[str, dict[str, tuple[str, str | None]]] = {}
    if language_of_values is not None:
        functions = [_as_source_text(f, language_of_values, declared, where) for f in functions]
    else:
        # A Python item's tuple parameters: JSON Schema writes them as arrays.
        declared = tuple_parameters(functions)
    try:
        return BfclTask(
            id=item_id(record),
            category=category,
            language=language,
            messages=tuple(BfclMessage.model_validate(m) for m in messages),
            functions=tuple(function_tool(f, where) for f in functions),
            ground_truth=tuple(truth),
            declared_types=declared,
        )
    except ValidationError as exc:
        raise invalid_record(exc, where, "item") from exc


def tuple_parameters(
    functions: Sequence[Any],
) -> dict[str, dict[str, tuple[str, str | None]]]:
    """The ``tuple`` parameters of BFCL function schemas, as ``BfclTask.declared_types`` holds them.

    ``{function: {parameter: ("tuple", element type)}}``: the JSON Schema a
    Python item's functions become writes a tuple as an array, and only a
    ``tuple`` parameter takes a tuple (prompt mode's ``f(x=(1, 2))``).
    """
    found: dict[str, dict[str, tuple[str, str | None]]] = {}
    for function in functions:
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            continue
        parameters = function.get("parameters")
        properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
        for key, schema in (properties or {}).items() if isinstance(properties, Mapping) else ():
            if isinstance(schema, Mapping) and schema.get("type") == "tuple":
                items = schema.get("items")
                element = items.get("type") if isinstance(items, Mapping) else None
                found.setdefault(function["name"], {})[key] = (
                    "tuple",
                    element if isinstance(element, str) else None,
                )
    return found


def _as_source_text(
    raw: Any, language: str, declared: dict[str, dict[str, tuple[str, str | None]]], where: str
) -> Any:
    """A Java or JavaScript function offered as BFCL offers it: each value a string of source text.

    Each parameter's declared type (and element type) goes into ``declared``
    for the checker; the model reads the type in the parameter's description.
    """
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        return raw  # function_tool says what is wrong
    parameters = raw.get("parameters") or {}
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    if not isinstance(properties, Mapping):
        return raw
    known = LANGUAGE_TYPES[language]
    name = "Java" if language == "java" else "JavaScript"
    types: dict[str, tuple[str, str | None]] = {}
    offered: dict[str, Any] = {}
    for key, schema in properties.items():
        kind = schema.get("type") if isinstance(schema, Mapping) else None
        if kind not in known:
            raise AahError(
                f"{where}: {raw['name']}.{key}: unknown {name} type {kind!r}: use one of "
                f"{', '.join(known)}"
            )
        items = schema.get("items")
        element = items.get("type") if isinstance(items, Mapping) else None
        types[key] = (kind, element if isinstance(element, str) else None)
        what = f"a {name} {kind}" + (f" of {element}" if element else "")
        note = f"{what}, written in {name} syntax" if kind != "any" else f"any {name} value"
        described = str(schema.get("description") or "").rstrip()
        offered[key] = {
            "type": "string",
            "description": f"{described} ({note}, as a string)".strip(),
            **({"default": schema["default"]} if "default" in schema else {}),
        }
    declared[raw["name"]] = types
    return {
        **raw,
        "description": f"{raw.get('description') or ''} (in {name} syntax)".strip(),
        "parameters": {**parameters, "type": "dict", "properties": offered},
    }
