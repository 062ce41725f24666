"""τ²'s natural-language assertions judged by aah's majority-vote grader, reported apart.

τ²'s own LLM judge never runs: each assertion of an ended simulation is put
to aah's grader (``MajorityVoteGrader``: V votes, a verdict only with a
quorum of valid ones, a tie or no quorum a flagged Fail) with the
conversation as τ² recorded it (``prompts/tau2_nl_assertion.md``,
versioned). The verdicts are stored as grades of their own
(:data:`NL_GRADER`), one per simulation: Pass when every assertion holds.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aah.events import TurnEndedEvent
from aah.llm import ModelConfig
from aah.prompts import PromptFolder
from aah.scoring.grader import MajorityVoteGrader, majority_vote
from aah.store import SessionStore

NL_GRADER = "tau2:nl"
PROMPTS = PromptFolder(Path(__file__).parent / "prompts")
NL_PROMPT = "tau2_nl_assertion"
# A tool result's text shown to the grader at most (the conversation stays readable).
RESULT_CHARS = 600


def conversation_text(messages: Sequence[dict[str, Any]]) -> str:
    """τ²'s recorded messages as lines the grader reads."""
    lines = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        for call in message.get("tool_calls") or []:
            arguments = json.dumps(call.get("arguments"), ensure_ascii=False)
            lines.append(f"{role} calls {call.get('name')}({arguments})")
        if role == "tool":
            text = str(content or "")
            lines.append(f"tool result: {text[:RESULT_CHARS]}")
        elif content:
            lines.append(f"{role}: {content}")
    return "\n".join(lines)


async def grade_nl_assertions(
    store: SessionStore, run: str, config: ModelConfig, votes: int = 5
) -> int:
    """Judge the NL assertions of ``run``'s ended simulations not judged yet; how many now."""
    with store.queries() as queries:
        done = {session_id for session_id, _ in queries.grade_votes([run], NL_GRADER)}
    graded: list[tuple[str, list[Any], Any]] = []
    prompt = PROMPTS.load(NL_PROMPT)
    async with MajorityVoteGrader(config, votes=votes) as grader:
        for session in store.list_sessions(run=run):
            if session.id in done:
                continue
            ended = [
                e
                for e in store.events(session.id)
                if isinstance(e, TurnEndedEvent) and e.state and "tau2_messages" in e.state
            ]
            check = ended[-1].check if ended else None
            if not ended or not check or not check.get("nl_assertions"):
                continue
            text = conversation_text((ended[-1].state or {}).get("tau2_messages") or [])
            verdicts = []
            for assertion in check["nl_assertions"]:
                asked = prompt.render(conversation=text, assertion=assertion)
                records = await grader.collect_votes(asked)
                verdict = majority_vote([r["vote"] for r in records], votes)
                verdicts.append(
                    {
                        "assertion": assertion,
                        "verdict": verdict.verdict,
                        "flag": verdict.flag,
                        "votes": [r["vote"] for r in records],
                    }
                )
            passed = all(v["verdict"] == "pass" for v in verdicts)
            graded.append((session.id, verdicts, "pass" if passed else "fail"))
    return store.add_grades(NL_GRADER, prompt.version, graded)
