"""The runtime's prompts: Markdown files beside this module, each with a version.

``prompt_versions`` gathers the versions of every prompt a session sends (the
runtime's and the tools package's), for a run's manifest.
"""

from __future__ import annotations

from pathlib import Path

from aah.prompts import Prompt, PromptFolder, read_prompt
from aah.tools import tool_prompt_versions

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"
RUNTIME_PROMPTS = PromptFolder(PROMPT_DIR)

__all__ = ["PROMPT_DIR", "Prompt", "load_prompt", "prompt_versions", "read_prompt"]


def load_prompt(name: str) -> Prompt:
    """The runtime's prompt ``prompts/<name>.md``."""
    return RUNTIME_PROMPTS.load(name)


def prompt_versions() -> dict[str, str]:
    """The version of every prompt a session may send, by name, for a run's manifest."""
    return {**RUNTIME_PROMPTS.versions(), **tool_prompt_versions()}
