"""ACEBench's Special items as typed tasks, read line by line from a data directory.

The data directory's ``acebench/`` folder (see its SOURCE.md) holds, per
language (``data_en/``, ``data_zh/``), three files of 50 items each
(``data_special_{incomplete,error_param,irrelevant}.json``, one JSON object
a line), their ground truth under ``possible_answer/``, and upstream's prompt
texts under ``prompts/``. Every file is read through the bounded reader.

A damaged line, an item without ground truth, ground truth that names an
API the item does not offer, or a question longer than
``MAX_QUESTION_CHARS`` costs that one item, with one line saying so: the
other items load and run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from aah.errors import AahError
from aah.peer_read import PeerBound, PeerOutOfBounds, parse_json, read_file

ACEBENCH_FOLDER = "acebench"
Category = Literal["incomplete", "error_param", "irrelevant"]
CATEGORIES: tuple[Category, ...] = ("incomplete", "error_param", "irrelevant")
Language = Literal["en", "zh"]
LANGUAGES: tuple[Language, ...] = ("en", "zh")
# The setting an ACEBench session is stored under.
ACEBENCH_SETTING = "acebench"
# Upstream's longest question is 499 characters; forty times that is no question.
MAX_QUESTION_CHARS = 20_000
# Upstream's files are under 200 KB; a thousand times that is no data file.
MAX_DATA_FILE_BYTES = 128 * 1024 * 1024
# One line of a data file (its offered functions included).
MAX_LINE_BYTES = 1024 * 1024
# The prompt texts are a few KB each.
MAX_PROMPT_BYTES = 256 * 1024


class AceTask(BaseModel):
    """One ACEBench Special item, ready to run.

    Attributes:
        id: ``<lang>-<upstream id>`` (``en-special_incomplete_0``), stable across loads.
        setting: Always ``acebench``.
        lang: ``en`` or ``zh``.
        category: ``incomplete``, ``error_param`` or ``irrelevant``.
        upstream_id: The item's ``id`` in upstream's file.
        question: The conversation as upstream writes it (``user: ...``).
        functions: The offered functions, as upstream's JSON schemas.
        time: The sentence giving the current time, or ``""``.
        ground_truth: ``{api: [missing params]}`` (incomplete), ``{param: [bad
            values]}`` (error_param), or upstream's fixed sentence (irrelevant).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    setting: str = ACEBENCH_SETTING
    lang: Language
    category: Category
    upstream_id: str
    question: str
    functions: tuple[dict[str, Any], ...]
    time: str
    ground_truth: dict[str, tuple[str, ...]] | str

    @property
    def group(self) -> str:
        """What ``--limit`` counts per: the language and category (``en/incomplete``)."""
        return f"{self.lang}/{self.category}"

    @property
    def user_text(self) -> str:
        """The question without upstream's leading ``user:`` (the aah reading's query)."""
        text = self.question.strip()
        return text[len("user:") :].strip() if text.lower().startswith("user:") else text


class Prompts(NamedTuple):
    """Upstream's prompt texts for one language: the special system prompt and the user's."""

    system: str
    user: str


class Loaded(NamedTuple):
    """What a load found: the tasks, one line per item left out, and the files' sha256."""

    tasks: list[AceTask]
    problems: list[str]
    sha256: str


def folder(data_dir: Path) -> Path:
    """The ACEBench folder of a data directory."""
    return data_dir / ACEBENCH_FOLDER


def data_file(data_dir: Path, lang: Language, category: Category) -> Path:
    """An item file of a data directory."""
    return folder(data_dir) / f"data_{lang}" / f"data_special_{category}.json"


def answer_file(data_dir: Path, lang: Language, category: Category) -> Path:
    """A ground-truth file of a data directory."""
    return folder(data_dir) / f"data_{lang}" / "possible_answer" / f"data_special_{category}.json"


def prompt_file(data_dir: Path, name: str) -> Path:
    """A prompt text of a data directory (``system_special_en``...)."""
    return folder(data_dir) / "prompts" / f"{name}.txt"


def _read_bytes(path: Path, cap: int) -> bytes:
    if not path.is_file():
        raise AahError(
            f"no ACEBench file at {path}: run `aah data fetch acebench` or pass --data DIR"
        )
    try:
        return read_file(path, PeerBound(str(path), cap, verb="holds"))
    except PeerOutOfBounds as exc:
        raise AahError(f"{exc}: fetch the data again") from None
    except OSError as exc:
        raise AahError(f"cannot read {path} ({exc}): fetch the data again") from None


def _read_text(path: Path, cap: int) -> str:
    try:
        return _read_bytes(path, cap).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AahError(f"{path} is not UTF-8 ({exc.reason}): fetch the data again") from None


def _lines(raw: bytes, name: str, problems: list[str]) -> list[tuple[str, str]]:
    """Each non-blank line of a file with where it is; a line that is not UTF-8 is a problem."""
    found = []
    for number, chunk in enumerate(raw.split(b"\n"), start=1):
        where = f"{name}:{number}"
        try:
            line = chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(f"{where}: not UTF-8 ({exc.reason}): the line is left out")
            continue
        if line.strip():
            found.append((line, where))
    return found


def load_prompts(data_dir: Path, lang: Language) -> Prompts:
    """Upstream's special system prompt and user prompt for ``lang``.

    Raises:
        AahError: a prompt file is missing, unreadable, or lacks its fields.
    """
    system = _read_text(prompt_file(data_dir, f"system_special_{lang}"), MAX_PROMPT_BYTES)
    user = _read_text(prompt_file(data_dir, f"user_{lang}"), MAX_PROMPT_BYTES)
    for name, text, fields in (
        (f"system_special_{lang}", system, ("{time}", "{function}")),
        (f"user_{lang}", user, ("{question}",)),
    ):
        lacking = [f for f in fields if f not in text]
        if lacking:
            raise AahError(
                f"{prompt_file(data_dir, name)} lacks {', '.join(lacking)}: fetch the data again"
            )
        try:
            # Filled as upstream fills it (``str.format``): any other field breaks it.
            text.format(**{field.strip("{}"): "" for field in fields})
        except (KeyError, IndexError, ValueError) as exc:
            raise AahError(
                f"{prompt_file(data_dir, name)} is no template upstream's format fills "
                f"({type(exc).__name__}: {exc}): fetch the data again"
            ) from None
    return Prompts(system, user)


def load_acebench(data_dir: Path, langs: Sequence[Language] = LANGUAGES) -> Loaded:
    """Every Special item of ``langs``, in file order, with a line per item left out.

    Raises:
        AahError: a file is missing or unreadable as a whole (each line is
            judged on its own).
    """
    import hashlib

    digest = hashlib.sha256()
    tasks: list[AceTask] = []
    problems: list[str] = []
    for lang in langs:
        for category in CATEGORIES:
            items_path = data_file(data_dir, lang, category)
            answers_path = answer_file(data_dir, lang, category)
            items_raw = _read_bytes(items_path, MAX_DATA_FILE_BYTES)
            answers_raw = _read_bytes(answers_path, MAX_DATA_FILE_BYTES)
            digest.update(items_raw)
            digest.update(answers_raw)
            # Named from the data directory: one short line each, whatever the path.
            answers_name = answers_path.relative_to(data_dir).as_posix()
            items_name = items_path.relative_to(data_dir).as_posix()
            answers = _answers(_lines(answers_raw, answers_name, problems), problems)
            seen: set[str] = set()
            for line, where in _lines(items_raw, items_name, problems):
                try:
                    task = parse_item(line, lang, category, answers, where)
                except AahError as exc:
                    problems.append(str(exc))
                    continue
                if task.id in seen:
                    problems.append(f"{where}: item id {task.upstream_id} repeats: left out")
                    continue
                seen.add(task.id)
                tasks.append(task)
    return Loaded(tasks, problems, digest.hexdigest())


def _line_value(line: str, where: str) -> Any:
    try:
        return parse_json(line, PeerBound(where, MAX_LINE_BYTES, verb="holds"))
    except PeerOutOfBounds as exc:
        raise AahError(f"{exc}: the item is left out") from None
    except ValueError as exc:
        raise AahError(f"{where}: not JSON ({exc}): the item is left out") from None


def _answers(lines: Sequence[tuple[str, str]], problems: list[str]) -> dict[str, Any]:
    """Ground truth by item id; a damaged line is one problem and no answer."""
    answers: dict[str, Any] = {}
    for line, where in lines:
        try:
            value = _line_value(line, where)
        except AahError as exc:
            problems.append(str(exc))
            continue
        if not isinstance(value, Mapping) or not isinstance(value.get("id"), str):
            problems.append(f"{where}: not an answer with a string 'id': left out")
            continue
        answers[value["id"]] = value.get("ground_truth")
    return answers


def parse_item(
    line: str, lang: Language, category: Category, answers: Mapping[str, Any], where: str
) -> AceTask:
    """One line of an item file as a task, with its ground truth.

    Raises:
        AahError: one line saying why the item is left out (damaged, no or
            malformed ground truth, an API the item does not offer, a question
            too long).
    """
    value = _line_value(line, where)
    if not isinstance(value, Mapping):
        raise AahError(f"{where}: not a JSON object: the item is left out")
    item_id, question = value.get("id"), value.get("question")
    functions, time = value.get("function"), value.get("time", "")
    if not isinstance(item_id, str) or not item_id:
        raise AahError(f"{where}: no string 'id': the item is left out")
    where = f"{where} ({item_id})"
    if not isinstance(question, str):
        raise AahError(f"{where}: 'question' is not text: the item is left out")
    if len(question) > MAX_QUESTION_CHARS:
        raise AahError(
            f"{where}: a question of {len(question):,} characters (over "
            f"{MAX_QUESTION_CHARS:,}): the item is left out"
        )
    if not isinstance(functions, list) or not all(
        isinstance(f, Mapping) and isinstance(f.get("name"), str) for f in functions
    ):
        raise AahError(f"{where}: 'function' is not a list of named functions: left out")
    if not isinstance(time, str):
        raise AahError(f"{where}: 'time' is not text: the item is left out")
    if item_id not in answers:
        raise AahError(f"{where}: no ground truth in possible_answer/: the item is left out")
    from aah.benchmark.acebench.tools import convert

    try:
        convert(functions, where)
    except AahError as exc:
        raise AahError(f"{exc}: the item is left out") from None
    truth = _ground_truth(answers[item_id], category, [f["name"] for f in functions], where)
    return AceTask(
        id=f"{lang}-{item_id}",
        lang=lang,
        category=category,
        upstream_id=item_id,
        question=question,
        functions=tuple(dict(f) for f in functions),
        time=time,
        ground_truth=truth,
    )


def _ground_truth(
    raw: Any, category: Category, offered: Sequence[str], where: str
) -> dict[str, tuple[str, ...]] | str:
    if category == "irrelevant":
        if not isinstance(raw, str):
            raise AahError(f"{where}: its ground truth is not a sentence: the item is left out")
        return raw
    if (
        not isinstance(raw, Mapping)
        or not raw
        or not all(
            isinstance(key, str)
            and isinstance(values, list)
            and values
            and all(isinstance(v, str) and v for v in values)
            for key, values in raw.items()
        )
    ):
        raise AahError(
            f"{where}: its ground truth is not {{name: [text, ...]}}: the item is left out"
        )
    if category == "incomplete":
        unknown = [api for api in raw if api not in offered]
        if unknown:
            raise AahError(
                f"{where}: its ground truth names the API {unknown[0]!r}, which the item "
                "does not offer: the item is left out"
            )
    return {key: tuple(values) for key, values in raw.items()}
