"""A runner process whose agent's booking call waits for approval in the queue.

Run as ``python approval_runner.py DB MODEL_URL TOOL_URL DEADLINE FALLBACK``:
one session calls ``local__book`` (POST, so the policy asks a person) on the
tool server at ``TOOL_URL``; DEADLINE is seconds (``none``: wait forever),
FALLBACK what the deadline decides. Prints ``<status>|<final answer>``.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

BOOK_ARGUMENTS = {"rooms": 2, "room_type": "double", "guest": "Ada <b>Lovelace</b>"}


def book_script() -> dict[str, Any]:
    """Awareness yes; call local__book; then say what the tool said."""
    call = {"tool_calls": [{"name": "local__book", "arguments": BOOK_ARGUMENTS}]}
    return {
        "rules": [
            {"when": {"has_tools": False}, "reply": "Yes, all there."},
            {"when": {"last_tool_name": "local__book"}, "reply": "Done with the booking."},
            {"when": {"has_tools": True}, "reply": call},
        ]
    }


def start_approval_runner(
    db: Path, model_url: str, tool_url: str, deadline: float | None = None, fallback: str = "reject"
) -> subprocess.Popen[str]:
    """This file as a script: a runner process with one session waiting on an approval."""
    return subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            str(db),
            model_url,
            tool_url,
            "none" if deadline is None else str(deadline),
            fallback,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def _run(db: Path, model_url: str, tool_url: str, deadline: str, fallback: str) -> str:
    from http_server import make_spec
    from pydantic import SecretStr

    from aah.llm.config import ModelConfig
    from aah.runtime import ApprovalPolicy, ApprovalRule, QueueHuman
    from aah.runtime.environment import open_runtime
    from aah.runtime.session import SessionRequest, run_session
    from aah.store.sessions import SessionStore
    from aah.tools.spec import ParameterSpec

    params = [
        ParameterSpec(name="rooms", type="integer", required=True, location="body"),
        ParameterSpec(
            name="room_type",
            enum=["single", "double", "suite"],
            location="body",
            description="The kind of room.",
        ),
        ParameterSpec(name="guest", location="body", description="Who stays."),
    ]
    spec = make_spec(tool_url, method="POST", name="book", params=params)
    policy = ApprovalPolicy(
        rules=(ApprovalRule(methods=("POST",)),),
        deadline=None if deadline == "none" else float(deadline),
        on_timeout=(fallback,),  # type: ignore[arg-type]
    )
    config = ModelConfig(base_url=model_url, model="fake-model", api_key=SecretStr("x"), retries=0)
    human = QueueHuman(SessionStore(db), poll_seconds=0.05)
    async with open_runtime(db=db, model=config, human=human, http_mode="live") as runtime:
        request = SessionRequest("Book two double rooms.", [spec], approvals=policy)
        outcome = await run_session(request, runtime)
    return f"{outcome.status}|{outcome.final_answer}"


if __name__ == "__main__":
    print(asyncio.run(_run(Path(sys.argv[1]), *sys.argv[2:6])), flush=True)
