"""Text the model reads from the tools package: feedback on bad calls, the ask_human tool.

The files live in ``prompts/`` beside this module (see ``aah.prompts``).
"""

from __future__ import annotations

from pathlib import Path

from aah.prompts import Prompt, PromptFolder

TOOL_PROMPTS = PromptFolder(Path(__file__).resolve().parent / "prompts")


def tool_prompt(name: str) -> Prompt:
    """The tools package's prompt ``prompts/<name>.md``."""
    return TOOL_PROMPTS.load(name)


def tool_prompt_versions() -> dict[str, str]:
    """The version of every prompt of the tools package, for a run's manifest."""
    return TOOL_PROMPTS.versions()
