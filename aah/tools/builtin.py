"""Tools that are not HTTP endpoints: ``ask_human`` (Ask-and-Help), ``find_tools`` (discovery)."""

from __future__ import annotations

from aah.tools.prompts import tool_prompt
from aah.tools.spec import ParameterSpec, ParamLocation

ASK_HUMAN = "ask_human"

# What the model reads about the tool (prompt files: aah/tools/prompts/ask_human_*.md).
ASK_HUMAN_DESCRIPTION = tool_prompt("ask_human_tool").render()

ASK_HUMAN_PARAMETERS = [
    ParameterSpec(
        name="question",
        type="string",
        required=True,
        description=tool_prompt("ask_human_question").render(),
        location=ParamLocation.BODY,
    )
]

FIND_TOOLS = "find_tools"

# What the model reads about the discovery tool (prompt files: aah/tools/prompts/find_tools_*.md).
FIND_TOOLS_DESCRIPTION = tool_prompt("find_tools_tool").render()

FIND_TOOLS_PARAMETERS = [
    ParameterSpec(
        name="need",
        type="string",
        required=True,
        description=tool_prompt("find_tools_need").render(),
        location=ParamLocation.BODY,
    )
]

# The tools the runtime answers itself: never an endpoint, never sent over HTTP.
BUILTIN_TOOLS = frozenset({ASK_HUMAN, FIND_TOOLS})
