"""Tools that are not HTTP endpoints: the ``ask_human`` tool of Ask-and-Help."""

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
