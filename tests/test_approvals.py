"""Approvals end to end: the gate, each decision, parking in the queue, and at-most-once runs.

Real model client against the fake server, real HTTP against a loopback
server that counts every request, the real store.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from http_server import LocalServer, make_spec
from runtime_support import awareness_rule, call, runtime_on

from aah.events import ApprovalDecidedEvent, ApprovalRequestedEvent, ToolCallEvent
from aah.runtime import (
    ApprovalPolicy,
    ApprovalReply,
    ApprovalRule,
    QueueHuman,
    ScriptedApprover,
    SessionRequest,
    run_session,
)
from aah.testing.fake_llm import FakeLLMServer
from aah.tools import ParameterSpec

pytestmark = pytest.mark.usefixtures("allow_private_tool_hosts")
POLICY = ApprovalPolicy(rules=(ApprovalRule(methods=("POST",)),))


def _book_script(**arguments: Any) -> dict[str, Any]:
    """Awareness yes; call local__book; answer with what the tool said."""
    return {
        "rules": [
            awareness_rule("Yes, all there."),
            {"when": {"last_tool_name": "local__book"}, "reply": "Done with the booking."},
            {"when": {"has_tools": True}, "reply": call("local__book", **arguments)},
        ]
    }


def _book_spec(server: LocalServer) -> Any:
    rooms = ParameterSpec(name="rooms", type="integer", required=True, location="body")
    kind = ParameterSpec(name="kind", type="string", location="body", enum=["single", "double"])
    return make_spec(server.url("/echo/book"), method="POST", name="book", params=[rooms, kind])


def _tool_results(events: list[Any]) -> list[ToolCallEvent]:
    return [e for e in events if isinstance(e, ToolCallEvent)]


async def _session(
    tmp_path: Path, approver: ScriptedApprover, policy: ApprovalPolicy | None = POLICY
) -> tuple[Any, list[Any], LocalServer, list[str]]:
    """Run one booking session; its outcome, events, the tool server and what the model read."""
    with LocalServer() as server, FakeLLMServer(_book_script(rooms=2)) as llm:
        async with runtime_on(llm, tmp_path / "s.db", http_mode="live") as rt:
            request = SessionRequest(
                "Book two rooms.", [_book_spec(server)], approvals=policy, approver=approver
            )
            outcome = await run_session(request, rt)
            events = rt.store.events(outcome.session_id)
        tool_texts = [
            str(m.get("content"))
            for body in llm.requests
            for m in body.get("messages", [])
            if m.get("role") == "tool"
        ]
    return outcome, events, server, tool_texts


async def test_a_response_is_the_result_the_agent_reads_and_the_call_never_runs(
    tmp_path: Path,
) -> None:
    reply = ApprovalReply(decision="respond", response="Booked: room 12", decided_by="ann")
    outcome, events, server, tool_texts = await _session(tmp_path, ScriptedApprover([reply]))
    assert outcome.status == "finished" and server.count("/echo") == 0
    assert _tool_results(events) == []
    (decided,) = [e for e in events if isinstance(e, ApprovalDecidedEvent)]
    assert (decided.outcome, decided.response, decided.decided_by) == (
        "responded",
        "Booked: room 12",
        "ann",
    )
    (read,) = tool_texts
    assert "Booked: room 12" in read and "Not run" in read


async def test_an_approved_call_runs_once_as_proposed(tmp_path: Path) -> None:
    approver = ScriptedApprover([ApprovalReply(decision="approve", decided_by="ann")])
    outcome, events, server, _ = await _session(tmp_path, approver)
    assert outcome.status == "finished"
    assert server.count("/echo") == 1
    (asked,) = approver.asked
    assert (asked.tool, asked.method, asked.arguments) == ("local__book", "POST", {"rooms": 2})
    assert asked.parameters[0]["name"] == "rooms"  # what a face needs for an edit form
    kinds = [e.kind for e in events]
    assert kinds.index("approval_requested") < kinds.index("approval_decided")
    assert kinds.index("approval_decided") < kinds.index("tool_call")
    (decided,) = [e for e in events if isinstance(e, ApprovalDecidedEvent)]
    assert (decided.outcome, decided.decided_by) == ("approved", "ann")


async def test_a_call_no_rule_matches_runs_without_asking(tmp_path: Path) -> None:
    approver = ScriptedApprover([])
    policy = ApprovalPolicy(rules=(ApprovalRule(methods=("DELETE",)),))
    outcome, events, server, _ = await _session(tmp_path, approver, policy)
    assert (outcome.status, server.count("/echo"), approver.asked) == ("finished", 1, [])
    assert not [e for e in events if isinstance(e, ApprovalRequestedEvent)]


async def test_an_edited_call_runs_with_the_new_arguments_and_the_agent_is_told(
    tmp_path: Path,
) -> None:
    edit = ApprovalReply(decision="edit", arguments={"rooms": 1}, decided_by="ann")
    outcome, events, server, tool_texts = await _session(tmp_path, ScriptedApprover([edit]))
    assert server.count("/echo") == 1
    (ran,) = _tool_results(events)
    assert ran.arguments == {"rooms": 1}
    assert '\\"rooms\\": 1' in ran.result  # the request's body, as the server echoed it
    (decided,) = [e for e in events if isinstance(e, ApprovalDecidedEvent)]
    assert (decided.outcome, decided.arguments) == ("edited", {"rooms": 1})
    assert any("edited this call" in text and '{"rooms": 2}' in text for text in tool_texts)


@pytest.mark.parametrize(
    "arguments",
    [
        {"rooms": "two"},
        {},
        {"rooms": 2, "pets": True},
        {"rooms": [2]},
        {"rooms": 2, "kind": "suite"},
        {"rooms": 2, "kind": "Double"},
    ],
    ids=[
        "wrong-type",
        "missing-required",
        "unknown-argument",
        "list-for-integer",
        "outside-enum",
        "enum-case",
    ],
)
async def test_an_invalid_edit_is_refused_and_never_sent(
    tmp_path: Path, arguments: dict[str, Any]
) -> None:
    edit = ApprovalReply(decision="edit", arguments=arguments, decided_by="ann")
    outcome, events, server, tool_texts = await _session(tmp_path, ScriptedApprover([edit]))
    assert server.count("/echo") == 0
    (decided,) = [e for e in events if isinstance(e, ApprovalDecidedEvent)]
    assert decided.outcome == "rejected" and "edited arguments were refused" in decided.reason
    assert any("rejected it" in text for text in tool_texts)


async def test_an_edit_that_changes_nothing_counts_as_approved(tmp_path: Path) -> None:
    edit = ApprovalReply(decision="edit", arguments={"rooms": 2}, decided_by="ann")
    _, events, server, _ = await _session(tmp_path, ScriptedApprover([edit]))
    (decided,) = [e for e in events if isinstance(e, ApprovalDecidedEvent)]
    assert (decided.outcome, server.count("/echo")) == ("approved", 1)


async def test_a_rejected_call_is_not_run_and_the_agent_reads_the_reason(tmp_path: Path) -> None:
    no = ApprovalReply(decision="reject", reason="we are over budget", decided_by="ann")
    outcome, events, server, tool_texts = await _session(tmp_path, ScriptedApprover([no]))
    assert (outcome.status, server.count("/echo")) == ("finished", 0)
    assert any("we are over budget" in text for text in tool_texts)
    assert not _tool_results(events)


async def test_terminate_ends_the_session_with_its_own_status(tmp_path: Path) -> None:
    stop = ApprovalReply(decision="terminate", reason="wrong hotel", decided_by="ann")
    outcome, events, server, _ = await _session(tmp_path, ScriptedApprover([stop]))
    assert (outcome.status, server.count("/echo")) == ("terminated", 0)
    assert "wrong hotel" in (outcome.error or "")
    assert events[-1].kind == "stopped"


async def test_a_timeout_asks_again_then_applies_the_last_fallback(tmp_path: Path) -> None:
    policy = POLICY.model_copy(update={"on_timeout": ("ask_again", "approve")})
    approver = ScriptedApprover([None, None])
    _, events, server, _ = await _session(tmp_path, approver, policy)
    assert [a.ask for a in approver.asked] == [1, 2]
    assert [a.fallback for a in approver.asked] == ["ask_again", "approve"]
    (decided,) = [e for e in events if isinstance(e, ApprovalDecidedEvent)]
    assert (decided.outcome, decided.decision, server.count("/echo")) == ("timed_out", "approve", 1)
    assert len([e for e in events if isinstance(e, ApprovalRequestedEvent)]) == 2


async def test_a_malformed_call_never_reaches_a_person(tmp_path: Path) -> None:
    approver = ScriptedApprover([])
    with LocalServer() as server, FakeLLMServer(_book_script(rooms="lots")) as llm:
        async with runtime_on(llm, tmp_path / "s.db", http_mode="live") as rt:
            request = SessionRequest(
                "Book rooms.", [_book_spec(server)], approvals=POLICY, approver=approver,
                step_limit=2,
            )  # fmt: skip
            await run_session(request, rt)
    assert (approver.asked, server.count("/echo")) == ([], 0)


async def test_the_queue_parks_the_session_and_a_decision_resumes_it(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with LocalServer() as server, FakeLLMServer(_book_script(rooms=2)) as llm:
        async with runtime_on(llm, db, http_mode="live") as rt:
            queue = QueueHuman(rt.store, park=True)
            request = SessionRequest(
                "Book two rooms.", [_book_spec(server)], approvals=POLICY, human=queue
            )
            parked = await run_session(request, rt)
            assert (parked.status, server.count("/echo")) == ("waiting", 0)
            pending = rt.store.humans.get_human_request(parked.waiting_on or "")
            assert pending is not None and pending.kind == "approval"
            assert pending.context["call"]["arguments"] == {"rooms": 2}
            assert rt.store.humans.decide_approval(pending.id, "ann", "approve")
            assert not rt.store.humans.decide_approval(pending.id, "bob", "reject")  # decided once
            request.session_id = parked.session_id
            done = await run_session(request, rt)
            again = await run_session(request, rt)  # a finished session is left alone
            events = rt.store.events(done.session_id)
    assert (done.status, again.status, server.count("/echo")) == ("finished", "finished", 1)
    assert len([e for e in events if isinstance(e, ApprovalDecidedEvent)]) == 1


async def test_a_resume_that_reads_a_decision_another_just_logged_does_not_run_the_call(
    tmp_path: Path,
) -> None:
    # The session is read as waiting; before this resumer reads the log, another
    # claims the session and logs the decision. Only the claim licenses going on.
    db = tmp_path / "s.db"
    with LocalServer() as server, FakeLLMServer(_book_script(rooms=2)) as llm:
        async with runtime_on(llm, db, http_mode="live") as rt:
            request = SessionRequest(
                "Book two rooms.",
                [_book_spec(server)],
                approvals=POLICY,
                human=QueueHuman(rt.store, park=True),
            )
            parked = await run_session(request, rt)
            pending = rt.store.humans.get_human_request(parked.waiting_on or "")
            assert pending is not None and rt.store.humans.decide_approval(
                pending.id, "ann", "approve"
            )
            read_log, claimed = rt.store.events, []

            def other_went_on_first(session_id: str) -> list[Any]:
                if claimed:
                    return read_log(session_id)
                requested = next(
                    e for e in read_log(session_id) if isinstance(e, ApprovalRequestedEvent)
                )
                decided = ApprovalDecidedEvent(
                    session_id=session_id,
                    request_id=requested.request_id,
                    call_id=requested.call_id,
                    tool=requested.tool,
                    decision="approve",
                    decided_by="ann",
                )
                claimed.append(rt.store.resume_waiting(session_id, [decided]))
                return read_log(session_id)

            rt.store.events = other_went_on_first  # type: ignore[method-assign]
            request.session_id = parked.session_id
            late = await run_session(request, rt)
            del rt.store.events
            events = rt.store.events(parked.session_id)
    assert claimed and claimed[0] is not None  # the other went on
    assert (late.error or "").startswith("the session went on elsewhere while it waited"), late
    assert server.count("/echo") == 0
    assert len([e for e in events if isinstance(e, ApprovalDecidedEvent)]) == 1


async def test_the_report_counts_each_outcome_per_call_and_shows_each_decision(
    tmp_path: Path,
) -> None:
    from aah.report import build_report, render_csv, render_json, render_markdown
    from aah.scoring import approval_metrics, load_approval_calls, load_outcomes

    decisions: list[ApprovalReply | None] = [
        ApprovalReply(decision="approve", decided_by="ann"),
        ApprovalReply(decision="edit", arguments={"rooms": 1}, decided_by="ann"),
        ApprovalReply(decision="reject", reason="too many", decided_by="bob"),
        None,  # nobody decides in time: the policy rejects
        ApprovalReply(decision="terminate", decided_by="bob"),
        ApprovalReply(decision="respond", response="Booked: room 12", decided_by="ann"),
    ]
    with LocalServer() as server, FakeLLMServer(_book_script(rooms=2)) as llm:
        async with runtime_on(llm, tmp_path / "s.db", http_mode="live") as rt:
            rt.store.create_run("r", {})
            for index, decision in enumerate(decisions):
                request = SessionRequest(
                    "Book two rooms.", [_book_spec(server)], approvals=POLICY,
                    approver=ScriptedApprover([decision]), run="r", task_id=f"t{index}",
                    setting="perfect",
                )  # fmt: skip
                await run_session(request, rt)
            calls = load_approval_calls(rt.store, ["r"])
            (cell,) = approval_metrics(calls, load_outcomes(rt.store, ["r"]))
            report = build_report(rt.store, ["r"])
    assert [c.outcome for c in calls] == ["approved", "edited", "rejected", "timed_out",
                                          "terminated", "responded"]  # fmt: skip
    assert (cell.calls, cell.sessions, cell.undecided) == (6, 6, 0)
    for rate in (
        cell.approved, cell.edited, cell.rejected, cell.timed_out, cell.terminated, cell.responded
    ):  # fmt: skip
        assert (rate.k, rate.n) == (1, 6)
    assert cell.decide_seconds_median is not None and cell.decide_seconds_p90 is not None
    assert cell.decide_seconds_median <= cell.decide_seconds_p90
    assert (cell.pass_rate_with_edits.n, cell.pass_rate_without_edits.n) == (1, 5)
    assert calls[1].executed == {"rooms": 1} and calls[1].proposed == {"rooms": 2}
    data = json.loads(render_json(report))
    assert data["approvals"][0]["edited"]["k"] == data["approvals"][0]["responded"]["k"] == 1
    assert "approvals" in render_csv(report) and "edited_value" in render_csv(report)
    text = render_markdown(report)
    assert "Approvals" in text and "too many" in text and "timed out" in text
    assert data["cells"][0]["terminated"] == 1


def _console(lines: list[str]) -> tuple[Any, list[str]]:
    """A console approver that reads ``lines`` in order and keeps what it said."""
    from aah.runtime import ConsoleApprover

    said: list[str] = []
    typed = iter(lines)
    return ConsoleApprover(prompt=lambda label: next(typed), say=said.append), said


@pytest.mark.parametrize(
    ("lines", "outcome", "ran"),
    [
        (["a"], "approved", 1),
        (["approve"], "approved", 1),
        (["x", "A"], "approved", 1),  # an unknown key is asked again
        (["r", "not today"], "rejected", 0),
        (["reject", ""], "rejected", 0),
        (["t", "stop it"], "terminated", 0),
        (["s", "Booked: room 12"], "responded", 0),  # the person's text is the result
        (["s", "", "r", ""], "rejected", 0),  # an empty response goes back to the choice
        (["e", '{"rooms": 3}'], "edited", 1),
        (["e", "{rooms: 3", '"three"', '{"rooms": "three"}', '{"rooms": 3}'], "edited", 1),
        (["e", "", "a"], "approved", 1),  # an empty edit goes back to the choice
        # JSON nested 1,000 deep and 101 deep: refused in one line, typed again.
        (
            [
                "e",
                "[" * 1_000 + "]" * 1_000,
                '{"rooms": ' + "[" * 101 + "]" * 101 + "}",
                '{"rooms": 3}',
            ],
            "edited",
            1,
        ),  # fmt: skip
        # Numbers of 5,000 and 400 digits: refused in one line before any int(), typed again.
        (
            ["e", '{"rooms": ' + "4" * 5_000 + "}", '{"rooms": ' + "4" * 400 + "}", '{"rooms": 3}'],
            "edited",
            1,
        ),  # fmt: skip
    ],
    ids=[
        "a",
        "approve",
        "unknown-then-a",
        "r",
        "reject-no-reason",
        "t",
        "s",
        "s-back",
        "e",
        "e-retries",
        "e-back",
        "e-too-deep",
        "e-too-many-digits",
    ],  # fmt: skip
)
async def test_the_console_approver_keys(
    tmp_path: Path, lines: list[str], outcome: str, ran: int
) -> None:
    approver, said = _console(lines)
    with LocalServer() as server, FakeLLMServer(_book_script(rooms=2)) as llm:
        async with runtime_on(llm, tmp_path / "s.db", http_mode="live") as rt:
            request = SessionRequest(
                "Book two rooms.", [_book_spec(server)], approvals=POLICY, approver=approver
            )
            done = await run_session(request, rt)
            events = rt.store.events(done.session_id)
    (decided,) = [e for e in events if isinstance(e, ApprovalDecidedEvent)]
    assert (decided.outcome, decided.decided_by, server.count("/echo")) == (outcome, "console", ran)
    assert said[0].startswith('approve? POST local__book {"rooms": 2}')
    # Why, in the words the web page and the terminal app use (rule_words).
    assert "Why it waits for you: the approval policy holds calls" in said[0]
    if "e-retries" in str(lines) or lines[:2] == ["e", "{rooms: 3"]:
        assert any(s.startswith("not JSON") for s in said)
        assert any("JSON object" in s for s in said)
        assert any(s.startswith("refused:") for s in said)  # a wrong type never runs
    if len(lines) > 1 and lines[1].startswith("[["):
        assert sum("nests deeper than 100 levels" in s for s in said) == 2
    if len(lines) > 1 and "4" * 400 in lines[1]:
        assert "refused: a number in the edit: at most 300 digits, not 5,000; type it again" in said
        assert "refused: a number in the edit: at most 300 digits, not 400; type it again" in said


@pytest.mark.parametrize(
    "answer",
    [
        '{"decision": "edit", "arguments": ' + "[" * 1_000 + "]" * 1_000 + "}",
        "edit " + '{"a": ' * 999 + "1" + "}" * 999,
        "edit " + "[" * 200 + "]" * 200,
    ],
    ids=["decision-1000-deep", "edit-word-999-deep", "edit-word-200-deep"],
)
def test_a_stored_decision_nested_too_deep_is_a_rejection_not_a_crash(answer: str) -> None:
    from aah.desk import decision_from_text

    reply = decision_from_text(answer, False, "alice")
    assert reply.decision == "reject" and reply.arguments is None


# -- batch approvers: the oracle (rules in the hidden facts) and the simulated user --------

FORBIDDING = [
    ("Do not book anything with booking__hotel.", True),
    ("Never use the hotel endpoint.", True),
    ("You must not call booking.", True),
    ("The user is not allowed to use Booking Hotel.", True),
    ("Book with booking__hotel on Friday.", False),  # names it, forbids nothing
    ("Don't spend more than 100 dollars.", False),  # forbids, names another thing
    ("Never use the hotels2 endpoint.", False),  # a word is matched whole
]


@pytest.mark.parametrize(("fact", "forbids"), FORBIDDING, ids=[f for f, _ in FORBIDDING])
async def test_the_oracle_approves_unless_a_hidden_fact_forbids_the_call(
    fact: str, forbids: bool
) -> None:
    from aah.benchmark.failtalms.fact_fit import TaskFacts
    from aah.benchmark.failtalms.humans import OracleHuman
    from aah.runtime import ApprovalRequest

    oracle = OracleHuman(TaskFacts(query="Book a room.", hidden_facts=["in Paris", fact]))
    request = ApprovalRequest(
        request_id="r", session_id="s", call_id="c", tool="booking__hotel", method="POST"
    )
    reply = await oracle.decide(request, lambda arguments: None)
    assert reply.decided_by == "oracle"
    assert (reply.decision, reply.reason) == (("reject", fact) if forbids else ("approve", ""))


@pytest.mark.parametrize(
    ("said", "decision", "reason"),
    [
        ("APPROVE", "approve", ""),
        ("Approve.", "approve", ""),
        ("REJECT: I never asked for two rooms", "reject", "I never asked for two rooms"),
        ("Sure, go ahead!", "reject", "the simulated user did not approve ('Sure, go ahead!')"),
    ],
)
async def test_the_simulated_user_decides_through_its_model(
    said: str, decision: str, reason: str
) -> None:
    from runtime_support import fake_config

    from aah.benchmark.failtalms.fact_fit import TaskFacts
    from aah.benchmark.failtalms.humans import SimulatedHuman
    from aah.runtime import ApprovalRequest

    with FakeLLMServer([said]) as llm:
        human = SimulatedHuman(TaskFacts(query="Book a room."), fake_config(llm))
        request = ApprovalRequest(
            request_id="r", session_id="s", call_id="c", tool="booking__hotel", method="POST",
            arguments={"rooms": 2},
        )  # fmt: skip
        reply = await human.decide(request, lambda arguments: None)
        (sent,) = llm.requests
    assert (reply.decision, reply.reason, reply.decided_by) == (decision, reason, "simulated")
    assert 'POST booking__hotel {"rooms": 2}' in sent["messages"][-1]["content"]


async def test_a_parked_approval_past_its_deadline_asks_again_then_falls_back(
    tmp_path: Path,
) -> None:
    import asyncio

    policy = POLICY.model_copy(update={"deadline": 0.2, "on_timeout": ("ask_again", "reject")})
    with LocalServer() as server, FakeLLMServer(_book_script(rooms=2)) as llm:
        async with runtime_on(llm, tmp_path / "s.db", http_mode="live") as rt:
            request = SessionRequest(
                "Book two rooms.", [_book_spec(server)], approvals=policy,
                human=QueueHuman(rt.store, park=True),
            )  # fmt: skip
            first = await run_session(request, rt)
            assert first.status == "waiting" and first.deadline is not None
            request.session_id = first.session_id
            await asyncio.sleep(0.3)
            second = await run_session(request, rt)  # woken at the deadline: asked again
            assert second.status == "waiting" and second.waiting_on != first.waiting_on
            await asyncio.sleep(0.3)
            done = await run_session(request, rt)
            events = rt.store.events(done.session_id)
            asks = [
                rt.store.humans.get_human_request(r or "")
                for r in (first.waiting_on, second.waiting_on)
            ]
    assert done.status == "finished" and server.count("/echo") == 0
    assert [a.status for a in asks if a is not None] == ["expired", "expired"]
    assert [a.fallback for a in asks if a is not None] == ["ask_again", "reject"]
    (decided,) = [e for e in events if isinstance(e, ApprovalDecidedEvent)]
    assert (decided.outcome, decided.decision, decided.decided_by) == (
        "timed_out",
        "reject",
        "deadline-fallback",
    )


def test_the_store_logs_one_request_per_ask_and_one_decision_per_call(tmp_path: Path) -> None:
    from aah.store import SessionStore

    with SessionStore(tmp_path / "s.db") as store:
        session = store.open_session("Book")
        asked = ApprovalRequestedEvent(
            session_id=session.id, request_id="r1", call_id="c1", tool="t__x"
        )
        first = ApprovalDecidedEvent(
            session_id=session.id, request_id="r1", call_id="c1", tool="t__x", decision="approve"
        )
        # A replay after a crash, or a second process, must not log a second decision.
        second = first.model_copy(update={"decision": "reject", "request_id": "r1-2"})
        assert len(store.append_events([asked, first])) == 2
        assert store.append_events([asked, second]) == []
        kinds = [e.kind for e in store.events(session.id)]
    assert kinds == ["approval_requested", "approval_decided"]
