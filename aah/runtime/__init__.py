"""The agent: state, prompts, awareness, graph, session driver, humans.

Public names load lazily (PEP 562), so importing one light module of the
package does not load the heavy ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.runtime.activity import Activity
    from aah.runtime.answer_watch import AnswerWatcher
    from aah.runtime.approval_policy import (
        ApprovalPolicy,
        ApprovalRule,
        ArgumentRule,
        load_policy,
        parse_policy,
        policy_from_flags,
        policy_from_options,
    )
    from aah.runtime.approvals import (
        ApprovalReply,
        ApprovalRequest,
        Approver,
        ConsoleApprover,
        EditCheck,
        QueueApprover,
        ScriptedApprover,
        approver_for,
    )
    from aah.runtime.awareness import SETTING_AWARENESS, ask_awareness, parse_awareness
    from aah.runtime.budget import DEFAULT_TOOL_RESULT_TOKENS, ContextOverflowError
    from aah.runtime.discovery import FoundTools, ToolFinder
    from aah.runtime.elicitations import (
        ElicitationAsk,
        ElicitingChannel,
        SessionElicitor,
        elicit_from,
        session_elicitor,
    )
    from aah.runtime.environment import open_runtime
    from aah.runtime.graph import build_graph
    from aah.runtime.humans import (
        HUMAN_CHANNELS,
        IDK_REPLY,
        ChannelOptions,
        ConsoleHuman,
        HumanChannel,
        HumanChannelFactory,
        HumanReply,
        HumanRequest,
        Parked,
        QueueHuman,
        ScriptedHuman,
        SessionEnded,
        make_human_channel,
    )
    from aah.runtime.loop import fewer_gc_pauses, run_async, worker_threads
    from aah.runtime.prompts import prompt_versions
    from aah.runtime.resume import Resumable, find_session, resume_request
    from aah.runtime.session import (
        Runtime,
        SessionOutcome,
        SessionRequest,
        first_prompt_tokens,
        record_failure,
        run_session,
    )
    from aah.runtime.tool_mode import ToolMode, ToolModeChoice, choose_tool_mode, tool_mode_choice
    from aah.runtime.turns import FollowUp, RanCall, StatefulExecutor, TurnReport, ran_calls
    from aah.runtime.work_clock import WorkClock, waiting_for_person, within_work_time

__all__ = [
    "ElicitationAsk",
    "ElicitingChannel",
    "SessionElicitor",
    "elicit_from",
    "session_elicitor",
    "ApprovalPolicy",
    "ApprovalRule",
    "ArgumentRule",
    "load_policy",
    "parse_policy",
    "policy_from_flags",
    "policy_from_options",
    "ApprovalReply",
    "ApprovalRequest",
    "Approver",
    "ConsoleApprover",
    "EditCheck",
    "QueueApprover",
    "ScriptedApprover",
    "approver_for",
    "Activity",
    "AnswerWatcher",
    "Parked",
    "first_prompt_tokens",
    "SETTING_AWARENESS",
    "IDK_REPLY",
    "DEFAULT_TOOL_RESULT_TOKENS",
    "ContextOverflowError",
    "FoundTools",
    "ToolFinder",
    "ToolMode",
    "ToolModeChoice",
    "choose_tool_mode",
    "tool_mode_choice",
    "HUMAN_CHANNELS",
    "ChannelOptions",
    "ConsoleHuman",
    "HumanChannel",
    "HumanChannelFactory",
    "FollowUp",
    "HumanReply",
    "HumanRequest",
    "RanCall",
    "StatefulExecutor",
    "TurnReport",
    "ran_calls",
    "QueueHuman",
    "Runtime",
    "ScriptedHuman",
    "SessionEnded",
    "SessionOutcome",
    "SessionRequest",
    "ask_awareness",
    "build_graph",
    "fewer_gc_pauses",
    "make_human_channel",
    "open_runtime",
    "parse_awareness",
    "prompt_versions",
    "record_failure",
    "run_async",
    "run_session",
    "WorkClock",
    "Resumable",
    "find_session",
    "resume_request",
    "waiting_for_person",
    "within_work_time",
    "worker_threads",
]

_WHERE = {
    "ElicitationAsk": "aah.runtime.elicitations",
    "ElicitingChannel": "aah.runtime.elicitations",
    "SessionElicitor": "aah.runtime.elicitations",
    "elicit_from": "aah.runtime.elicitations",
    "session_elicitor": "aah.runtime.elicitations",
    "ApprovalPolicy": "aah.runtime.approval_policy",
    "ApprovalRule": "aah.runtime.approval_policy",
    "ArgumentRule": "aah.runtime.approval_policy",
    "load_policy": "aah.runtime.approval_policy",
    "parse_policy": "aah.runtime.approval_policy",
    "policy_from_flags": "aah.runtime.approval_policy",
    "policy_from_options": "aah.runtime.approval_policy",
    "ApprovalReply": "aah.runtime.approvals",
    "ApprovalRequest": "aah.runtime.approvals",
    "Approver": "aah.runtime.approvals",
    "ConsoleApprover": "aah.runtime.approvals",
    "EditCheck": "aah.runtime.approvals",
    "QueueApprover": "aah.runtime.approvals",
    "ScriptedApprover": "aah.runtime.approvals",
    "approver_for": "aah.runtime.approvals",
    "Activity": "aah.runtime.activity",
    "AnswerWatcher": "aah.runtime.answer_watch",
    "Parked": "aah.runtime.humans",
    "first_prompt_tokens": "aah.runtime.session",
    "SETTING_AWARENESS": "aah.runtime.awareness",
    "IDK_REPLY": "aah.runtime.humans",
    "DEFAULT_TOOL_RESULT_TOKENS": "aah.runtime.budget",
    "ContextOverflowError": "aah.runtime.budget",
    "FoundTools": "aah.runtime.discovery",
    "ToolFinder": "aah.runtime.discovery",
    "ToolMode": "aah.runtime.tool_mode",
    "ToolModeChoice": "aah.runtime.tool_mode",
    "choose_tool_mode": "aah.runtime.tool_mode",
    "tool_mode_choice": "aah.runtime.tool_mode",
    "HUMAN_CHANNELS": "aah.runtime.humans",
    "ChannelOptions": "aah.runtime.humans",
    "ConsoleHuman": "aah.runtime.humans",
    "HumanChannel": "aah.runtime.humans",
    "HumanChannelFactory": "aah.runtime.humans",
    "HumanReply": "aah.runtime.humans",
    "HumanRequest": "aah.runtime.humans",
    "QueueHuman": "aah.runtime.humans",
    "Runtime": "aah.runtime.session",
    "ScriptedHuman": "aah.runtime.humans",
    "SessionOutcome": "aah.runtime.session",
    "SessionRequest": "aah.runtime.session",
    "ask_awareness": "aah.runtime.awareness",
    "build_graph": "aah.runtime.graph",
    "make_human_channel": "aah.runtime.humans",
    "open_runtime": "aah.runtime.environment",
    "parse_awareness": "aah.runtime.awareness",
    "prompt_versions": "aah.runtime.prompts",
    "record_failure": "aah.runtime.session",
    "run_async": "aah.runtime.loop",
    "run_session": "aah.runtime.session",
    "worker_threads": "aah.runtime.loop",
    "fewer_gc_pauses": "aah.runtime.loop",
    "SessionEnded": "aah.runtime.humans",
    "resume_request": "aah.runtime.resume",
    "Resumable": "aah.runtime.resume",
    "find_session": "aah.runtime.resume",
    "WorkClock": "aah.runtime.work_clock",
    "waiting_for_person": "aah.runtime.work_clock",
    "within_work_time": "aah.runtime.work_clock",
    "FollowUp": "aah.runtime.turns",
    "RanCall": "aah.runtime.turns",
    "StatefulExecutor": "aah.runtime.turns",
    "TurnReport": "aah.runtime.turns",
    "ran_calls": "aah.runtime.turns",
}


__getattr__ = lazy_getattr(__name__, _WHERE)
