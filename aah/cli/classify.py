"""``aah classify``: put replies in When2Call behaviour classes, one JSON object a line.

Each input line is a JSON object with ``reply`` (the text), optional ``tools``
(the names offered) and optional ``tool_calls`` (how many native calls came
with it). Each output line is the input object with ``class`` and ``rule``
added, so labels and ids travel along; a summary goes to stderr.

``--compare-judge`` classifies every reply twice, by the rules and by the LLM
judge, adds ``judge_class`` and ``judge_rule`` to each line, and reports on
stderr the rules' accuracy (with its Wilson interval), per-class F1 and macro
F1 taking the judge's class as the reference.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import typer

from aah.cli.options import ConcurrencyOption, ForceOption, ModelOption
from aah.cli.output import check_output_name, err_console, write_output
from aah.errors import AahError
from aah.extensions import BEHAVIOUR_JUDGE_NAMES, BehaviourJudgeName
from aah.peer_read import PeerBound, PeerOutOfBounds, read_file
from aah.secrets import scrub_text

if TYPE_CHECKING:
    from aah.llm import ModelConfig
    from aah.scoring.behavior import Classification


class ReplyLine(NamedTuple):
    """One input line: where it was, the object, and what to classify."""

    number: int
    data: dict[str, Any]
    reply: str
    tools: list[str]
    tool_calls: int


def classify(
    file: Path = typer.Argument(..., help="JSONL file: objects with 'reply' and optional 'tools'."),
    out: Path | None = typer.Option(
        None, "--out", help="Write the JSONL to this new file, not to stdout."
    ),
    judge: str = typer.Option(
        "rule", "--judge", help=f"{' or '.join(BEHAVIOUR_JUDGE_NAMES)}: offline rules or an LLM."
    ),
    model: ModelOption = None,
    concurrency: ConcurrencyOption = 8,
    votes: int = typer.Option(
        1,
        "--votes",
        min=1,
        help="LLM judge votes per reply; its label needs ceil(V/2) readable votes and no tie.",
    ),
    compare_judge: bool = typer.Option(
        False,
        "--compare-judge",
        help="Classify by the rules and by the LLM judge; report the rules' accuracy and "
        "per-class F1 against the judge.",
    ),
    force: ForceOption = False,
) -> None:
    """Classify replies as tool_call, request_for_info, cannot_answer or direct.

    The LLM judge's model is AAH_JUDGE_MODEL (else AAH_GRADER_MODEL) unless --model names one.
    """
    judge_replies = choose_judge("rule" if compare_judge else judge)
    if out is not None:
        check_output_name(out, force=force, option="--out")
    lines = read_reply_lines(file)
    options = JudgeOptions(model, concurrency, Counter(), votes)
    results = judge_replies(lines, options)
    pairs = zip(lines, results, strict=True)
    rows = [{**line.data, "class": r.label, "rule": r.rule} for line, r in pairs]
    if compare_judge:
        verdicts = _llm_judge(lines, options)
        for row, verdict in zip(rows, verdicts, strict=True):
            row["judge_class"], row["judge_rule"] = verdict.label, verdict.rule
    text = "".join(_json_line(row) for row in rows)
    if out is None:
        print(text, end="")
    else:
        write_output(out, scrub_text(text) or "", force=force, option="--out")
    err_console.print(summary(rows), highlight=False, markup=False, soft_wrap=True)
    if compare_judge:
        err_console.print(judge_comparison(rows), highlight=False, markup=False, soft_wrap=True)
    flagged = judge_flags(rows, "judge_rule" if compare_judge else "rule")
    if flagged:
        err_console.print(flagged, highlight=False, markup=False, soft_wrap=True)
    failed = judge_failures(
        rows, "judge_rule" if compare_judge else "rule", options.failures or Counter()
    )
    if failed:
        # The lines are written; the exit status says they are not all judged.
        raise AahError(failed)


class JudgeOptions(NamedTuple):
    """What a judge of replies may need: the judge model (LLM), and requests at once.

    ``failures`` counts, by message, the requests an LLM judge could not make;
    ``votes`` is the LLM judge's votes per reply.
    """

    model: str | None = None
    concurrency: int = 8
    failures: Counter[str] | None = None
    votes: int = 1


# Puts each reply line in a When2Call behaviour class.
ReplyJudge = Callable[[Sequence[ReplyLine], JudgeOptions], "list[Classification]"]


def _rule_judge(lines: Sequence[ReplyLine], options: JudgeOptions) -> list[Classification]:
    from aah.scoring.behavior import classify_reply

    return [classify_reply(line.reply, line.tools, line.tool_calls) for line in lines]


def _llm_judge(lines: Sequence[ReplyLine], options: JudgeOptions) -> list[Classification]:
    from aah.llm import model_config
    from aah.runtime import run_async

    config = model_config("judge", model=options.model)
    return run_async(
        judge_lines(lines, config, options.concurrency, options.failures, options.votes)
    )


# Who classifies replies (``aah classify --judge``), by name.
BEHAVIOUR_JUDGES: dict[BehaviourJudgeName, ReplyJudge] = {"rule": _rule_judge, "llm": _llm_judge}


def choose_judge(name: str) -> ReplyJudge:
    """The judge called ``name`` (a key of :data:`BEHAVIOUR_JUDGES`).

    Raises:
        AahError: No judge has that name; the message names the valid flags.
    """
    for key, judge in BEHAVIOUR_JUDGES.items():
        if key == name:
            return judge
    flags = " or ".join(f"--judge {key}" for key in BEHAVIOUR_JUDGES)
    raise AahError(f"unknown judge {name!r}: use {flags}")


# The most a file of replies to classify may hold (When2Call's outputs are a few MB).
MAX_REPLY_FILE_BYTES = 512 * 1024 * 1024


def read_reply_lines(file: Path) -> list[ReplyLine]:
    """The non-blank lines of ``file`` as replies to classify.

    Raises:
        AahError: The file cannot be read, or a line is not a valid reply object.
    """
    try:
        raw = read_file(
            file, PeerBound(f"the file {file}", MAX_REPLY_FILE_BYTES, verb="holds")
        ).decode("utf-8")
    except PeerOutOfBounds:
        raise AahError(
            f"{file} is more than {MAX_REPLY_FILE_BYTES:,} bytes: split it into several files"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise AahError(f"cannot read {file}: {reason}; pass a UTF-8 JSONL file") from exc
    return [
        _reply_line(file, number, line)
        for number, line in enumerate(raw.splitlines(), start=1)
        if line.strip()
    ]


def _reply_line(file: Path, number: int, line: str) -> ReplyLine:
    where = f"{file}:{number}"
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise AahError(f"{where} is not valid JSON ({exc.msg}): fix or remove that line") from exc
    if not isinstance(data, dict) or not isinstance(data.get("reply"), str):
        raise AahError(f"{where} needs a JSON object with a string 'reply': fix that line")
    tools = data.get("tools", [])
    if not isinstance(tools, list) or not all(isinstance(name, str) for name in tools):
        raise AahError(f"{where}: 'tools' must be a list of tool names: fix that line")
    calls = data.get("tool_calls", 0)
    if not isinstance(calls, int) or isinstance(calls, bool) or calls < 0:
        raise AahError(f"{where}: 'tool_calls' must be a count (0 or more): fix that line")
    return ReplyLine(number, data, data["reply"], tools, calls)


# After this many failed requests with none answered, the judge is taken to be down.
_JUDGE_DOWN_AFTER = 8
# The rule of a reply the judge's request failed on (the rules' class stands in).
_JUDGE_FAILED = "llm_failed:"


async def judge_lines(
    lines: Sequence[ReplyLine],
    config: ModelConfig,
    concurrency: int = 8,
    failures: Counter[str] | None = None,
    votes: int = 1,
) -> list[Classification]:
    """Classify ``lines`` with the LLM judge, ``concurrency`` at a time, with a progress bar.

    A reply whose request fails keeps the rules' class, with a rule starting
    ``llm_failed:``, and its error is counted in ``failures``; the others are
    still judged. Each reply gets ``votes`` votes (see `classify_with_llm`).

    Raises:
        AahError: The judge answered none of the first requests (it is down,
            or refuses them); no more are sent.
    """
    import asyncio

    from rich.progress import Progress

    from aah.llm import ChatClient
    from aah.scoring.behavior import Classification, classify_reply, classify_with_llm
    from aah.storable import storable_text

    gate = asyncio.Semaphore(concurrency)
    client = ChatClient(config)
    failures = Counter() if failures is None else failures
    judged = 0

    async def one(line: ReplyLine) -> Classification:
        nonlocal judged
        async with gate:
            if judged or failures.total() < _JUDGE_DOWN_AFTER:
                try:
                    result = await classify_with_llm(
                        line.reply,
                        line.tools,
                        config,
                        tool_calls=line.tool_calls,
                        client=client,
                        votes=votes,
                    )
                    judged += 1
                    return result
                except AahError as exc:
                    failures[storable_text(str(exc))] += 1
            fallback = classify_reply(line.reply, line.tools, line.tool_calls)
            return Classification(fallback.label, f"{_JUDGE_FAILED}{fallback.rule}")

    try:
        with Progress(console=err_console, transient=True) as progress:
            task = progress.add_task("judging replies", total=len(lines))

            async def counted(line: ReplyLine) -> Classification:
                result = await one(line)
                progress.advance(task)
                return result

            results = list(await asyncio.gather(*(counted(line) for line in lines)))
    finally:
        await client.aclose()
    if failures and not judged:
        error = failures.most_common(1)[0][0]
        raise AahError(f"{error.rstrip('.')}; no reply was judged: fix the judge model and rerun")
    return results


def judge_failures(rows: Sequence[dict[str, Any]], field: str, errors: Counter[str]) -> str | None:
    """One line when the judge's requests failed on some replies, else None.

    It names the most frequent error, which names the server.
    """
    failed = sum(str(row.get(field, "")).startswith(_JUDGE_FAILED) for row in rows)
    if not failed:
        return None
    common = errors.most_common(1)[0][0].rstrip(".") if errors else "no error message"
    return (
        f"the LLM judge's requests failed on {failed} of {len(rows)} replies ({common}): the "
        f"rules' class stands in for them (rule {_JUDGE_FAILED}...); rerun to judge them"
    )


# The judge's rule when its votes gave no label (science.md §2's quorum rule)
# and the rules' class stood in, by flag.
_JUDGE_FLAGS = {"no quorum": "llm_no_quorum:", "tie": "llm_tie:"}
# The judge's rule whenever the rules' class stood in for its label.
_JUDGE_FELL_BACK = (*_JUDGE_FLAGS.values(), _JUDGE_FAILED)


def judge_flags(rows: Sequence[dict[str, Any]], field: str) -> str | None:
    """One line counting the replies whose judge votes gave no label, by flag; else None."""
    counts = {
        flag: sum(str(row.get(field, "")).startswith(prefix) for row in rows)
        for flag, prefix in _JUDGE_FLAGS.items()
    }
    flagged = sum(counts.values())
    if not flagged:
        return None
    parts = ", ".join(f"{flag} {n}" for flag, n in counts.items() if n)
    return (
        f"the LLM judge gave no label on {flagged} of {len(rows)} replies ({parts}): the rules' "
        f"class stands in for them (rule {' or '.join(_JUDGE_FLAGS.values())}...)"
    )


def _json_line(row: dict[str, Any]) -> str:
    r"""``row`` as one JSON line; a lone surrogate stays a ``\ud800`` escape, as it came."""
    return (
        _LONE_SURROGATE.sub(
            lambda m: f"\\u{ord(m.group()):04x}", json.dumps(row, ensure_ascii=False)
        )
        + "\n"
    )


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def judge_comparison(rows: Sequence[dict[str, Any]]) -> str:
    """The rules' accuracy, per-class F1 and macro F1, with the LLM judge's class as reference.

    Replies the judge never classified plainly (the rules' class stood in for
    its verdict) would agree by construction: they are left out and counted.
    """
    from aah.scoring.behavior import BEHAVIOR_CLASSES, confusion

    judged = [row for row in rows if not str(row["judge_rule"]).startswith(_JUDGE_FELL_BACK)]
    matrix = confusion((row["judge_class"], row["class"]) for row in judged)
    accuracy = matrix.accuracy
    if accuracy.value is None or accuracy.low is None or accuracy.high is None:
        head = "rules vs LLM judge: no reply the judge classified"
    else:
        head = (
            f"rules vs LLM judge on {accuracy.n} replies: accuracy {100 * accuracy.value:.1f}% "
            f"[{100 * accuracy.low:.1f}–{100 * accuracy.high:.1f}] ({accuracy.k} agree)"
        )
    lines = [head]
    for label in BEHAVIOR_CLASSES:
        scores = matrix.scores(label)
        f1 = "no data" if scores.f1 is None else f"{scores.f1:.3f}"
        lines.append(f"  F1 {label}: {f1} (judge says {label} for {scores.support})")
    macro = matrix.macro_f1
    lines.append(f"  macro F1: {'no data' if macro is None else f'{macro:.3f}'}")
    left_out = len(rows) - len(judged)
    if left_out:
        lines.append(
            f"  {left_out} replies left out: the judge's votes gave no label (no quorum "
            "or a tie), or its request failed"
        )
    return "\n".join(lines)


def summary(rows: Sequence[dict[str, Any]]) -> str:
    """One line per class count, and the agreement with a ``label`` field where given."""
    counts = Counter(str(row["class"]) for row in rows)
    parts = ", ".join(f"{label} {n}" for label, n in sorted(counts.items()))
    text = f"classified {len(rows)} replies: {parts or 'none'}"
    labelled = [row for row in rows if "label" in row]
    if labelled:
        agree = sum(row["label"] == row["class"] for row in labelled)
        text += f"\nagrees with 'label' on {agree} of {len(labelled)}"
    return text
