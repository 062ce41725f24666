"""Prompts are data: Markdown files, each with a version the run manifest records.

Every text a model reads (system prompts, corrective feedback, the ask_human
tool's description...) lives in a ``prompts/`` folder beside the package that
sends it, one file a text. A file may start with front matter holding its
``version:``; change the version whenever the text changes, so that runs
made with different texts can be told apart.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, NamedTuple


class Prompt(NamedTuple):
    """A prompt template and the version written in its front matter."""

    version: str
    template: str

    def render(self, **values: Any) -> str:
        """The template with ``{name}`` fields filled in (``str.format`` rules)."""
        return self.template.format(**values).strip()


@cache
def read_prompt(path: Path) -> Prompt:
    """A prompt file: Markdown, with ``version:`` in its front matter (else its stem)."""
    text = path.read_text(encoding="utf-8")
    version = path.stem
    if text.startswith("---\n"):
        header, _, text = text[4:].partition("\n---\n")
        for line in header.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "version":
                version = value.strip()
    return Prompt(version, text.strip() + "\n")


class PromptFolder(NamedTuple):
    """A package's folder of prompt files, ``<name>.md`` each."""

    path: Path

    def load(self, name: str) -> Prompt:
        """The prompt ``<name>.md`` in this folder."""
        return read_prompt(self.path / f"{name}.md")

    def versions(self) -> dict[str, str]:
        """Every prompt's version by name, for a run's manifest."""
        return {path.stem: self.load(path.stem).version for path in sorted(self.path.glob("*.md"))}
