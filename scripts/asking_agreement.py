"""Both readings of "does this question address the blocker" against the hand labels (§8).

Every labelled question of ``tests/fixtures/asking_labels.jsonl`` (or
``--labels``) becomes one session of a run in a session database: its
blocker in the session's context, its question as an ``ask_human`` question.
The run is then read as ``aah grade --asking`` reads one (``run_asking_tasks``,
then ``read_tasks`` with the ``AskingGrader``: the same prompt, votes,
quorum and parsing), so both readings are stored in ``ask_readings``. To
measure the grader on every label, it is also asked (the same
``AskingGrader.read``) about the questions the rules read as yes; those
readings are printed, not stored, as ``aah grade --asking`` never asks them.

Printed: n; the rules' agreement with the labels (a "cannot say" counted as
no) and on their yes; the grader's on every label and on those the rules
cannot say; the combined reading's (rules first, the grader where they cannot
say: what the report counts); Cohen's kappa of each; the grader's votes that
did not parse and its readings without a quorum. A reading without quorum
counts as no, as the report counts it.

The grader model is AAH_GRADER_MODEL (else AAH_MODEL) at AAH_GRADER_BASE_URL
(else AAH_BASE_URL), as for ``aah grade``; ``--model`` and ``--base-url``
override them. The labels carry no user request: the prompt's request is ""
unless a label has a ``request`` field. With ``--db`` the readings stay in
that database, and a second run reuses those already stored (the grader
model and prompt version the same).

Measured on all 249 labels with the packaged SmolLM2-135M (Q4_1) as the grader
(``aah serve llamacpp --threads 1``, AAH_GRADER_MAX_TOKENS=16, 5 votes at
temperature 1.0, 2 shared CPU cores). The rules: 195/249 (78.3%, kappa
0.566), their yes 72/74 (97.3%). Prompt asking/1 (28 minutes): grader on
every label 115/249 (46.2%, kappa -0.079), where the rules cannot say 97/175
(55.4%, kappa -0.143), combined 169/249 (67.9%, kappa 0.357); 2,658 of 3,160
votes unparsed, 162 readings without quorum, 12 tied. Prompt asking/2 (15
minutes; before self-contradicting votes were dropped, 5 of its 1,691 stored
votes): grader 128/249 (51.4%, kappa 0.029), where the rules cannot say
80/175 (45.7%, kappa -0.031), combined 152/249 (61.0%, kappa 0.222); 1,319 of
2,352 votes unparsed, 10 without quorum, 27 tied. A model this small is no
grader: its votes parse, but agree with people no better than chance.

Run: .venv/bin/python scripts/asking_agreement.py [--every K] [--limit N] [--votes 5]
     [--temperature 1.0] [--db PATH] [--model NAME] [--base-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from aah.errors import AahError
from aah.events import HumanQuestionEvent
from aah.llm import ModelConfig, model_config
from aah.scoring import Blocker, pair_agreement, run_asking_tasks, stored_blockers
from aah.scoring.asking_grader import AskingGrader, read_tasks
from aah.scoring.grader import DEFAULT_TEMPERATURE, DEFAULT_VOTES, check_vote_settings, quorum
from aah.store import SessionStore

LABELS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "asking_labels.jsonl"
RUN = "asking-labels"


@dataclass(frozen=True)
class Label:
    """One hand-labelled question: its blocker, and whether it addresses it."""

    id: int
    question: str
    blocker: Blocker
    label: bool
    request: str = ""

    @property
    def session_id(self) -> str:
        """The session that holds it."""
        return f"label-{self.id}"


@dataclass
class Read:
    """One label's readings: the rules', the grader's, and the grader's votes."""

    label: Label
    rules: bool | None
    grader: bool | None = None
    flag: str | None = None
    votes: Sequence[dict[str, Any]] = ()


def load_labels(path: Path) -> list[Label]:
    """The labels of ``path`` (one JSON object a line), in file order.

    Raises:
        AahError: the file cannot be read or a line is no label.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise AahError(f"cannot read the labels {path}: {exc.strerror}; pass --labels") from None
    labels = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            blocker = row["blocker"]
            key = f"param:{blocker['name']}" if blocker["kind"] == "parameter" else "span:0"
            found = Blocker.from_json({**blocker, "id": key})
            if found is None or not isinstance(row["label"], bool):
                raise ValueError
            labels.append(
                Label(
                    int(row["id"]),
                    str(row["question"]),
                    found,
                    row["label"],
                    row.get("request", ""),
                )
            )
        except (ValueError, KeyError, TypeError):
            raise AahError(
                f"{path} line {number} is no label (id, question, blocker, label): fix or remove it"
            ) from None
    return labels


def select(labels: Sequence[Label], every: int, limit: int | None) -> list[Label]:
    """Every ``every``-th label from the first, at most ``limit`` of them."""
    chosen = list(labels[::every])
    return chosen if limit is None else chosen[:limit]


def store_questions(store: SessionStore, labels: Sequence[Label]) -> None:
    """One session per label in run ``RUN``: its blocker in the context, its question asked."""
    if store.get_run(RUN) is None:
        store.create_run(RUN, {"benchmark": "asking-labels", "labels": len(labels)})
    for label in labels:
        store.open_session(
            label.request,
            run=RUN,
            task_id=label.session_id,
            session_id=label.session_id,
            recipe={"context": {"blockers": [label.blocker.to_json()]}},
        )
        store.append_event(
            HumanQuestionEvent(
                session_id=label.session_id, request_id=label.session_id, question=label.question
            )
        )


async def read_labels(
    store: SessionStore, labels: Sequence[Label], grader: AskingGrader, progress: Progress
) -> list[Read]:
    """Each label read as ``aah grade --asking`` reads it; the grader also asked on the rules' yes.

    Raises:
        AahError: the grader model could not be reached or used.
    """
    store_questions(store, labels)
    blockers = stored_blockers(store, RUN)
    bar = progress.add_task("reading", total=len(labels))
    reads = []
    for label in labels:
        one = {label.session_id: blockers[label.session_id]}
        tasks = run_asking_tasks(store, RUN, one)
        await read_tasks(store, tasks, {label.session_id: label.request}, grader)
        [row] = store.ask_readings.of_sessions([label.session_id])
        read = Read(label, row.rules, row.grader, row.flag, row.votes)
        if row.rules:
            verdict = await grader.read(label.request, label.question, label.blocker)
            read = Read(label, row.rules, verdict.reading, verdict.flag, verdict.votes)
        reads.append(read)
        progress.advance(bar)
    return reads


def agreement_line(name: str, pairs: Sequence[tuple[bool, bool]], kappa: bool = True) -> str:
    """``name: k/n (p%, 95% CI low-high), Cohen's kappa x`` (kappa left out when not asked)."""
    found = pair_agreement(pairs)
    share = found.agreement
    if not share.n:
        return f"{name}: no labels"
    line = (
        f"{name}: {share.k}/{share.n} ({share.value:.1%}, 95% CI {share.low:.1%}-{share.high:.1%})"
    )
    if not kappa:
        return line
    return line + f", Cohen's kappa {'undefined' if found.kappa is None else f'{found.kappa:.3f}'}"


def summary(reads: Sequence[Read], votes: int) -> list[str]:
    """The figures, one line each."""
    rules = [(bool(r.rules), r.label.label) for r in reads]
    rules_yes = [(True, r.label.label) for r in reads if r.rules]
    grader = [(bool(r.grader), r.label.label) for r in reads]
    undecided = [(bool(r.grader), r.label.label) for r in reads if not r.rules]
    combined = [(bool(r.rules) or bool(r.grader), r.label.label) for r in reads]
    cast = [v for r in reads for v in r.votes]
    unparsed = sum(v.get("vote") is None for v in cast)
    flags = [r.flag for r in reads]
    positives = sum(r.label.label for r in reads)
    return [
        f"labels: n={len(reads)} ({positives} yes, {len(reads) - positives} no)",
        agreement_line("rules vs labels (cannot say = no)", rules),
        # The rules only ever say yes here: a kappa is undefined, the share is their precision.
        agreement_line("rules' yes vs labels", rules_yes, kappa=False),
        agreement_line("grader vs labels, every label", grader),
        agreement_line("grader vs labels, where the rules cannot say", undecided),
        agreement_line("combined (rules, then grader) vs labels", combined),
        f"grader votes: {len(cast)} cast, {unparsed} unparsed ({votes} asked per reading, "
        f"quorum {quorum(votes)}); readings: {flags.count('no_quorum')} without quorum, "
        f"{flags.count('tie')} tied",
    ]


def grader_config(model: str | None, base_url: str | None) -> ModelConfig:
    """The grader model, as ``aah grade`` configures it, with the flags' overrides."""
    config = model_config("grader", model=model)
    return config if base_url is None else config.model_copy(update={"base_url": base_url})


async def measure(args: argparse.Namespace, db: Path, console: Console) -> list[str]:
    """Read the selected labels into ``db`` and return the figures' lines."""
    check_vote_settings(args.votes, args.temperature)
    labels = select(load_labels(args.labels), args.every, args.limit)
    if not labels:
        raise AahError("no labels selected: lower --every or raise --limit")
    config = grader_config(args.model, args.base_url)
    console.print(
        f"grader {config.model} at {config.base_url}: {len(labels)} labels, "
        f"{args.votes} votes at temperature {args.temperature}"
    )
    with SessionStore(db) as store:
        grader = AskingGrader(config, votes=args.votes, temperature=args.temperature)
        async with grader:
            with Progress(console=console) as progress:
                reads = await read_labels(store, labels, grader, progress)
    return summary(reads, args.votes)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and print; one line and status 1 on an error."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--every", type=int, default=1, help="read every K-th label (default 1)")
    parser.add_argument("--limit", type=int, default=None, help="at most N labels")
    parser.add_argument("--votes", type=int, default=DEFAULT_VOTES)
    parser.add_argument("--temperature", type=float, default=DEFAULT_TEMPERATURE)
    parser.add_argument("--model", default=None, help="grader model (default: as aah grade)")
    parser.add_argument("--base-url", default=None, help="grader server (default: as aah grade)")
    parser.add_argument("--db", type=Path, default=None, help="keep the readings here")
    args = parser.parse_args(argv)
    if args.every < 1 or (args.limit is not None and args.limit < 1):
        parser.error("--every and --limit must be at least 1")
    console = Console(stderr=True)
    try:
        with tempfile.TemporaryDirectory() as folder:
            db = args.db or Path(folder) / "asking-labels.db"
            lines = asyncio.run(measure(args, db, console))
    except AahError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            "interrupted: the readings made are kept with --db; run again to go on", file=sys.stderr
        )
        return 130
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
