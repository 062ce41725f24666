"""Tools that are not HTTP endpoints: the ``ask_human`` tool of Ask-and-Help."""

from __future__ import annotations

from aah.tools.spec import ParameterSpec, ParamLocation

ASK_HUMAN = "ask_human"

ASK_HUMAN_DESCRIPTION = (
    "Ask the user a question in plain language and get their reply. Use it when "
    "information you need is missing from the request, when a tool you would need "
    "is unavailable and the user may be able to do its job, or when you need the "
    "user to confirm a choice. Ask one clear, specific question at a time."
)

ASK_HUMAN_PARAMETERS = [
    ParameterSpec(
        name="question",
        type="string",
        required=True,
        description="The question for the user, in plain language.",
        location=ParamLocation.BODY,
    )
]
