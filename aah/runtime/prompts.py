"""Prompts are data: Markdown files beside this module, each with a version."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import NamedTuple

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"


class Prompt(NamedTuple):
    """A prompt template and the version written in its front matter."""

    version: str
    template: str

    def render(self, **values: str) -> str:
        """The template with ``{name}`` fields filled in."""
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


def load_prompt(name: str) -> Prompt:
    """The runtime's prompt ``prompts/<name>.md``."""
    return read_prompt(PROMPT_DIR / f"{name}.md")


def prompt_versions() -> dict[str, str]:
    """Every prompt's version, for a run's manifest."""
    return {path.stem: load_prompt(path.stem).version for path in sorted(PROMPT_DIR.glob("*.md"))}
