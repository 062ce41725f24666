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
  imported, from which folder and files, and what the import counted
  (``import_counts``: records, duplicates, anomalies by kind).
- **Every record counts**, as in the paper's figures. One session per
  record, task id ``<setting>-<query_id>`` (setting as stored: ``perfect``,
  ``underspecified``...). A ``query_id`` seen before in the same file (a
  task run and appended again) is its own session keyed by its position in
  the file's list (from 0): ``<setting>-<query_id>@<position>``; a record
  without ``query_id`` is ``<setting>-@<position>``.
- **Odd records are imported, not refused.** A ``model_answer`` that is
  absent or null is imported as empty, one that is not a string (a model
  that returned a structure) as its JSON text; a field of another wrong
  type is ignored. Each such record is counted by kind in the manifest and
  named in the summary's warnings, one line per file and kind.
- **Unreadable files are skipped, not fatal.** A file that is not JSON, not
  a list, or holds a record that is not an object is reported by name with
  the reason; the other files still import.
- **Sessions' contents.** An awareness event per annotation (the
  annotation is the answer, the awareness text its reason; without an
  annotation the answer is read from the text, by the reply grammar the
  runtime uses), a question and an answer event per interaction score (its
  human request's answer carries the score as the 0/1 rating), the final
  answer, status ``skipped`` or ``finished``, and, unless skipped (like the
  grader, which grades finished sessions only), a grade by grader
  ``published`` whose one vote is the published score (``pass_rate``; pass
  when >= 1). A record without ``pass_rate`` stays ungraded. **No-tools**
  records are graded on ``win_rate`` only (science.md §5), as the paper's
  evaluation script does (pass when >= 1: one file holds a 2 with the
  rationale "win"); one without ``win_rate`` is a fail (vote 0), whatever
  its ``pass_rate``.
- **Idempotent.** Sessions are unique per (run, task id), task ids depend
  only on the file's contents, and a session is closed only once all its
  records are in, so importing again adds nothing, and an import cut short
  resumes where it stopped. A run keeps the manifest of its first import.
- Folders that are not one of the five settings are skipped with a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from aah.benchmark.failtalms.published import (
    InteractionScore,
    PublishedAnswer,
    odd_record_warnings,
    read_answers,
)
from aah.errors import AahError
from aah.events import (
    AwarenessEvent,
    Event,
    FinalAnswerEvent,
    HumanAnswerEvent,
    HumanQuestionEvent,
)
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
COUNTS_KEY = "import_counts"
# The published vote of a No-tools record that has no win_rate: a fail.
NO_PASS = 0.0

ImportProgress = Callable[[int, int], None]


class AnswerFile(NamedTuple):
    """A published answers file and what its place in the tree says."""

    path: Path
    setting: str
    folder: str


class UnreadableFile(NamedTuple):
    """An answers file that could not be imported, and why (one line)."""

    path: Path
    reason: str


@dataclass
class ImportCounts:
    """What one run's files held: every record is imported and counted.

    Attributes:
        records: Records read (each one a session).
        duplicates: Records whose ``query_id`` appeared earlier in their file.
        anomalous: Records with at least one anomaly.
        anomalies: Records per anomaly kind (keys of ``ANOMALIES``).
    """

    records: int = 0
    duplicates: int = 0
    anomalous: int = 0
    anomalies: dict[str, int] = field(default_factory=dict)

    def add(self, answers: Sequence[PublishedAnswer]) -> None:
        """Count one file's records."""
        self.records += len(answers)
        self.duplicates += sum(a.first_position is not None for a in answers)
        self.anomalous += sum(bool(a.anomalies) for a in answers)
        for answer in answers:
            for kind in answer.anomalies:
                self.anomalies[kind] = self.anomalies.get(kind, 0) + 1

    def to_json(self) -> dict[str, Any]:
        """The counts as stored in the run's manifest."""
        return {
            "records": self.records,
            "duplicates": self.duplicates,
            "anomalous": self.anomalous,
            "anomalies": dict(sorted(self.anomalies.items())),
        }


@dataclass
class ImportSummary:
    """What an import did.

    Attributes:
        runs: Every run the readable files belong to, by name.
        runs_added: Those that did not exist before.
        files: Answer files read.
        sessions_added: Sessions written now.
        sessions_present: Records whose session was already imported.
        counts: Per run, the records, duplicates and anomalies of its files.
        unreadable: Files skipped because they could not be read.
        warnings: One line per folder skipped, or per file and kind of odd record.
    """

    runs: list[str] = field(default_factory=list)
    runs_added: list[str] = field(default_factory=list)
    files: int = 0
    sessions_added: int = 0
    sessions_present: int = 0
    counts: dict[str, ImportCounts] = field(default_factory=dict)
    unreadable: list[UnreadableFile] = field(default_factory=list)
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


def import_failtalms_outputs(
    folder: Path, store: SessionStore, progress: ImportProgress | None = None
) -> ImportSummary:
    """Import every published answers file under ``folder`` into ``store``.

    Files that cannot be read are listed in ``unreadable``; the rest import.

    Args:
        folder: The Fail-TaLMs ``outputs`` folder (or the repository holding it).
        store: Where the runs and sessions go.
        progress: Called with (records done, records in all) after each record.

    Raises:
        AahError: ``folder`` is missing or holds no answers file.
    """
    found, warnings = find_answer_files(folder)
    summary = ImportSummary(warnings=warnings)
    parsed: list[tuple[AnswerFile, list[PublishedAnswer]]] = []
    for file in found:
        try:
            answers = read_answers(file.path)
        except AahError as exc:
            summary.unreadable.append(UnreadableFile(file.path, str(exc)))
            continue
        parsed.append((file, answers))
        summary.counts.setdefault(run_name(file.folder), ImportCounts()).add(answers)
        summary.warnings += odd_record_warnings(file.path, answers)
    summary.files = len(parsed)
    total = sum(len(answers) for _, answers in parsed)
    done = 0
    for run in _create_runs(folder, [file for file, _ in parsed], store, summary):
        for file, answers in parsed:
            if run_name(file.folder) != run:
                continue
            for answer in answers:
                added = _import_answer(store, file, answer)
                summary.sessions_added += added
                summary.sessions_present += not added
                done += 1
                if progress is not None:
                    progress(done, total)
    return summary


def import_notes(run: str, manifest: Mapping[str, Any]) -> list[str]:
    """The report's note on an imported run's duplicates and anomalies (none if neither)."""
    counts = manifest.get(COUNTS_KEY)
    if not isinstance(counts, dict):
        return []
    duplicates, anomalous = int(counts.get("duplicates", 0)), int(counts.get("anomalous", 0))
    if not duplicates and not anomalous:
        return []
    parts = [f"run {run} was imported from {counts.get('records', 0)} records, each counted"]
    if duplicates:
        parts.append(f"{duplicates} repeat a query_id of their file and are sessions of their own")
    if anomalous:
        kinds = counts.get("anomalies") or {}
        detail = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))
        parts.append(f"{anomalous} are odd records ({detail}); see `aah import` warnings")
    return ["; ".join(parts)]


# -- writing ------------------------------------------------------------------------


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
                COUNTS_KEY: summary.counts[name].to_json(),
            },
        )
    summary.runs = list(by_run)
    return summary.runs


def _import_answer(store: SessionStore, file: AnswerFile, answer: PublishedAnswer) -> bool:
    """Write one record's session; False when it was already imported."""
    model, aah = model_of(file.folder)
    session = store.open_session(
        answer.query,
        run=run_name(file.folder),
        task_id=answer.task_id(file.setting),
        setting=file.setting,
        aah=aah,
        model=model,
    )
    if session.status != "running":
        return False
    planned: list[Event] = [
        AwarenessEvent(
            session_id=session.id, question=a.question, answer=a.answer, reason=a.text, raw=a.text
        )
        for a in answer.awareness
    ]
    planned += _interaction_events(session.id, answer)
    planned.append(FinalAnswerEvent(session_id=session.id, text=answer.model_answer))
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
    store.finish_session(
        session.id, "skipped" if answer.skipped else "finished", answer.model_answer
    )
    return True


def _record(
    store: SessionStore, session: SessionRecord, event: Event, ratings: dict[str, int | None]
) -> None:
    if isinstance(event, HumanQuestionEvent):
        if store.humans.get_human_request(event.request_id) is None:
            context = {"query": session.query, "setting": session.setting, "source": PUBLISHED}
            store.humans.create_human_request(
                session.id, event.question, context, request_id=event.request_id
            )
    elif isinstance(event, HumanAnswerEvent):
        # Before the event, so that a resumed import never leaves it unanswered;
        # a second answer by the same annotator is ignored by the store.
        rating = ratings.get(event.request_id)
        store.humans.answer_human_request(event.request_id, PUBLISHED, event.answer, rating=rating)
    store.append_event(event)


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
    if setting == "notools":
        # science.md §5: No-tools passes on its win rate alone, and a record
        # without one is no pass; its pass_rate grades the tool-using answer
        # it was compared with, and falling back to it misreads 4 of the
        # paper's 5 non-Qwen No-tools cells (Llama 8B: 0.12 for 0.00).
        return NO_PASS if answer.win_rate is None else answer.win_rate
    return answer.pass_rate
