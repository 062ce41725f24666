"""Import the Fail-TaLMs paper's published outputs into the session store.

The paper's repository publishes each model's answers as
``outputs/<Setting>/<model>[_qaq]/answers.json`` (science.md §5). Importing
them makes the paper's own results runs like any other, so ``aah report``
can set them beside new runs with the same formulas and intervals.

Decisions:

- **Runs.** One run per model folder, named ``published:<folder>``, e.g.
  ``published:gpt_4o_auto_eval_qaq``; it spans every setting that folder
  appears in. A ``_qaq`` folder is a run with Aah on; the session's model is
  the folder name without ``_qaq``. The run's manifest records that it was
  imported, from which folder and files.
- **Sessions.** One per answer, task id ``<setting>-<query_id>`` (setting as
  stored: ``perfect``, ``underspecified``...). Each gets an awareness event
  per annotation (the annotation is the answer, the awareness text its
  reason; without an annotation the answer is read from the start of the
  text, as the runtime reads a live reply), a question and an answer event
  per interaction score (its human request's answer carries the score as
  the 0/1 rating), the final answer, status ``skipped`` or ``finished``,
  and, unless skipped (like the grader, which grades finished sessions
  only), a grade by grader ``published`` whose one vote is the published
  score (``win_rate`` where No-tools has it, else ``pass_rate``; pass when
  >= 1). An answer with neither score stays ungraded.
- **Idempotent.** Sessions are unique per (run, task id) and a session is
  closed only once all its records are in, so importing again adds nothing,
  and an import cut short resumes where it stopped. A run keeps the manifest
  of its first import.
- Every file is read and checked before anything is written: a malformed
  file stops the import with one line naming it. Folders that are not one
  of the five settings are skipped with a warning.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from aah.errors import AahError
from aah.events import (
    AwarenessAnswer,
    AwarenessEvent,
    AwarenessQuestion,
    Event,
    FinalAnswerEvent,
    HumanAnswerEvent,
    HumanQuestionEvent,
)
from aah.runtime.awareness import parse_awareness
from aah.store import SessionRecord, SessionStore, Verdict

SETTING_FOLDERS = {
    "Original": "perfect",
    "Underspecified": "underspecified",
    "Replaceable": "replaceable",
    "Non-replaceable": "nonreplaceable",
    "No-tools": "notools",
}
RUN_PREFIX = "published:"
AAH_SUFFIX = "_qaq"
# Who "answered", "graded" and "annotated" in imported records.
PUBLISHED = "published"
PROMPT_VERSION = "failtalms-outputs"
ANSWERS_FILE = "answers.json"

ImportProgress = Callable[[int, int], None]


class InteractionScore(BaseModel):
    """One question the model asked a person, the reply, and its 0/1 score."""

    model_config = ConfigDict(extra="ignore")

    question: str
    user_response: str = ""
    score: int | str | None = None


class PublishedAnswer(BaseModel):
    """One entry of a published ``answers.json`` (unknown keys are ignored)."""

    model_config = ConfigDict(extra="ignore")

    query_id: int | str
    query: str
    skipped: bool = False
    pass_rate: float | None = None
    win_rate: float | None = None
    model_answer: str | None = None
    tool_annotation: str | None = None
    info_annotation: str | None = None
    tool_awareness: str | None = None
    info_awareness: str | None = None
    interaction_scores: list[InteractionScore] = Field(default_factory=list)


class AnswerFile(NamedTuple):
    """A published answers file and what its place in the tree says."""

    path: Path
    setting: str
    folder: str


@dataclass
class ImportSummary:
    """What an import did.

    Attributes:
        runs: Every run the files belong to, by name.
        runs_added: Those that did not exist before.
        files: Answer files read.
        sessions_added: Sessions written now.
        sessions_present: Answers whose session was already imported.
        warnings: One line per folder skipped or value read leniently.
    """

    runs: list[str] = field(default_factory=list)
    runs_added: list[str] = field(default_factory=list)
    files: int = 0
    sessions_added: int = 0
    sessions_present: int = 0
    warnings: list[str] = field(default_factory=list)


def run_name(folder: str) -> str:
    """The run a model folder is imported as: ``published:<folder>``."""
    return f"{RUN_PREFIX}{folder}"


def model_of(folder: str) -> tuple[str, bool]:
    """``(model, aah)`` for a model folder: the ``_qaq`` suffix means Aah on."""
    if folder.endswith(AAH_SUFFIX):
        return folder[: -len(AAH_SUFFIX)], True
    return folder, False


def find_answer_files(folder: Path) -> tuple[list[AnswerFile], list[str]]:
    """Every ``<Setting>/<model>/answers.json`` under ``folder``, and warnings.

    ``folder`` may be the ``outputs`` folder or the repository that holds it.

    Raises:
        AahError: ``folder`` is missing or holds no answers file.
    """
    if not folder.is_dir():
        raise AahError(f"no folder at {folder}: pass the Fail-TaLMs outputs folder")
    root = folder / "outputs" if (folder / "outputs").is_dir() else folder
    files: list[AnswerFile] = []
    warnings: list[str] = []
    for setting_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        if setting_dir.name.startswith("."):
            continue
        setting = SETTING_FOLDERS.get(setting_dir.name)
        if setting is None:
            known = ", ".join(SETTING_FOLDERS)
            warnings.append(f"skipped {setting_dir}: not a setting folder ({known})")
            continue
        for model_dir in sorted(p for p in setting_dir.iterdir() if p.is_dir()):
            path = model_dir / ANSWERS_FILE
            if path.is_file():
                files.append(AnswerFile(path, setting, model_dir.name))
            else:
                warnings.append(f"skipped {model_dir}: it has no {ANSWERS_FILE}")
    if not files:
        raise AahError(
            f"no <Setting>/<model>/{ANSWERS_FILE} under {root}: pass the Fail-TaLMs outputs folder"
        )
    return files, warnings


def read_answers(path: Path) -> list[PublishedAnswer]:
    """The entries of one published answers file.

    Raises:
        AahError: The file is not JSON, not a list, or an entry lacks a field
            or has one of the wrong type.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AahError(f"{path} is not readable JSON ({exc}): fix or remove it") from exc
    if not isinstance(data, list):
        raise AahError(f"{path} holds no list of answers: fix or remove it")
    answers = []
    for index, entry in enumerate(data):
        try:
            answers.append(PublishedAnswer.model_validate(entry))
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "entry"
            raise AahError(
                f"{path}: answer {index} is malformed ({where}: {problem['msg']}): "
                "fix or remove the file"
            ) from exc
    return answers


def import_failtalms_outputs(
    folder: Path, store: SessionStore, progress: ImportProgress | None = None
) -> ImportSummary:
    """Import every published answers file under ``folder`` into ``store``.

    Args:
        folder: The Fail-TaLMs ``outputs`` folder (or the repository holding it).
        store: Where the runs and sessions go.
        progress: Called with (answers done, answers in all) after each answer.

    Raises:
        AahError: No answers file found, or one is malformed (nothing is
            written then).
    """
    files, warnings = find_answer_files(folder)
    parsed = [(file, read_answers(file.path)) for file in files]
    summary = ImportSummary(files=len(files), warnings=warnings)
    total = sum(len(answers) for _, answers in parsed)
    done = 0
    for run in _create_runs(folder, files, store, summary):
        for file, answers in parsed:
            if run_name(file.folder) != run:
                continue
            for answer in answers:
                added = _import_answer(store, file, answer, summary.warnings)
                summary.sessions_added += added
                summary.sessions_present += not added
                done += 1
                if progress is not None:
                    progress(done, total)
    return summary


def _create_runs(
    folder: Path, files: Sequence[AnswerFile], store: SessionStore, summary: ImportSummary
) -> list[str]:
    by_run: dict[str, list[AnswerFile]] = {}
    for file in files:
        by_run.setdefault(run_name(file.folder), []).append(file)
    source = folder.resolve()
    for name, run_files in by_run.items():
        model, aah = model_of(run_files[0].folder)
        if store.get_run(name) is None:
            summary.runs_added.append(name)
        store.create_run(
            name,
            {
                "imported": "failtalms-outputs",
                "source": str(source),
                "files": [f.path.relative_to(folder).as_posix() for f in run_files],
                "model": model,
                "aah": aah,
                "settings": [f.setting for f in run_files],
            },
        )
    summary.runs = list(by_run)
    return summary.runs


def _import_answer(
    store: SessionStore, file: AnswerFile, answer: PublishedAnswer, warnings: list[str]
) -> bool:
    """Write one answer's session; False when it was already imported."""
    model, aah = model_of(file.folder)
    session = store.open_session(
        answer.query,
        run=run_name(file.folder),
        task_id=f"{file.setting}-{answer.query_id}",
        setting=file.setting,
        aah=aah,
        model=model,
    )
    if session.status != "running":
        return False
    planned = _awareness_events(session.id, answer, file, warnings)
    planned += _interaction_events(session.id, answer)
    final = answer.model_answer or ""
    planned.append(FinalAnswerEvent(session_id=session.id, text=final))
    ratings = {
        f"{session.id}-q{index}": _rating(item)
        for index, item in enumerate(answer.interaction_scores)
    }
    # A session cut short earlier has its first events already: add the rest.
    for event in planned[session.n_events :]:
        _record(store, session, event, ratings)
    score = _published_score(file.setting, answer)
    # Like the grader, only finished sessions get a grade: a skipped one is no pass.
    graded = any(g.grader_model == PUBLISHED for g in store.grades(session.id))
    if score is not None and not answer.skipped and not graded:
        verdict: Verdict = "pass" if score >= 1 else "fail"
        store.add_grade(session.id, PUBLISHED, PROMPT_VERSION, [score], verdict)
    # Closing the session last marks it whole, which makes the import idempotent.
    store.finish_session(session.id, "skipped" if answer.skipped else "finished", final)
    return True


def _record(
    store: SessionStore, session: SessionRecord, event: Event, ratings: dict[str, int | None]
) -> None:
    if isinstance(event, HumanQuestionEvent):
        if store.get_human_request(event.request_id) is None:
            context = {"query": session.query, "setting": session.setting, "source": PUBLISHED}
            store.create_human_request(
                session.id, event.question, context, request_id=event.request_id
            )
    elif isinstance(event, HumanAnswerEvent):
        # Before the event, so that a resumed import never leaves it unanswered;
        # a second answer by the same annotator is ignored by the store.
        rating = ratings.get(event.request_id)
        store.answer_human_request(event.request_id, PUBLISHED, event.answer, rating=rating)
    store.append_event(event)


def _awareness_events(
    session_id: str, answer: PublishedAnswer, file: AnswerFile, warnings: list[str]
) -> list[Event]:
    events: list[Event] = []
    questions: tuple[tuple[AwarenessQuestion, str | None, str | None], ...] = (
        ("information", answer.info_annotation, answer.info_awareness),
        ("tool", answer.tool_annotation, answer.tool_awareness),
    )
    for question, annotation, reason in questions:
        if annotation is None and reason is None:
            continue
        parsed = _awareness_answer(annotation, reason)
        if parsed == "none":
            warnings.append(
                f"{file.path}: query {answer.query_id} has no yes/idk/no {question} "
                "annotation: recorded as none"
            )
        text = reason or annotation or ""
        events.append(
            AwarenessEvent(
                session_id=session_id, question=question, answer=parsed, reason=text, raw=text
            )
        )
    return events


def _awareness_answer(annotation: str | None, reason: str | None) -> AwarenessAnswer:
    # An annotation decides; only without one is the reason text read, from its start.
    text = annotation if annotation is not None else reason
    parsed = parse_awareness(text) if text else None
    return parsed[0] if parsed is not None else "none"


def _interaction_events(session_id: str, answer: PublishedAnswer) -> list[Event]:
    events: list[Event] = []
    for index, item in enumerate(answer.interaction_scores):
        request_id = f"{session_id}-q{index}"
        events.append(
            HumanQuestionEvent(session_id=session_id, request_id=request_id, question=item.question)
        )
        events.append(
            HumanAnswerEvent(
                session_id=session_id,
                request_id=request_id,
                answer=item.user_response,
                answered_by=PUBLISHED,
            )
        )
    return events


def _rating(item: InteractionScore) -> int | None:
    # Scores are published as 0/1 numbers or as the strings "0"/"1".
    text = str(item.score).strip() if item.score is not None else ""
    return int(text) if text in ("0", "1") else None


def _published_score(setting: str, answer: PublishedAnswer) -> float | None:
    if setting == "notools" and answer.win_rate is not None:
        return answer.win_rate
    return answer.pass_rate
