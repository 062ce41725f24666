"""A run's guidelines (Markdown from ``--guidelines FILE``) as the faces show them.

The file is text from outside: it may hold HTML, scripts, images that would
load from anywhere, or links of any scheme. The web page gets it as HTML
that markdown-it renders with raw HTML off (it is shown escaped), images
off (shown as their words), and links only to http(s) or mail addresses,
each opening apart from the page; the terminal app shows it as Markdown
text, which Textual renders without running anything.
"""

from __future__ import annotations

import functools

from markdown_it import MarkdownIt

# The most characters shown beside an item; the file is capped when read, and
# a page need not carry all of a long one with every item.
SHOWN_CHARS = 8_000
_SCHEMES = ("http://", "https://", "mailto:")


@functools.cache
def _renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False})
    md.disable(["image", "html_block", "html_inline"])
    default_validate = md.validateLink

    def validate(url: str) -> bool:
        return default_validate(url) and url.strip().lower().startswith(_SCHEMES)

    md.validateLink = validate  # type: ignore[method-assign]
    return md


def shown_text(text: str) -> str:
    """``text`` cut to ``SHOWN_CHARS``, saying so where it was cut."""
    if len(text) <= SHOWN_CHARS:
        return text
    return text[:SHOWN_CHARS] + "\n\n… (the guidelines go on: ask your admin for the whole file)"


def guidelines_html(text: str | None) -> str:
    """The guidelines as a block of safe HTML, or ``""`` when the run has none."""
    if not text or not text.strip():
        return ""
    body = _renderer().render(shown_text(text))
    body = body.replace("<a href=", '<a target="_blank" rel="noopener noreferrer nofollow" href=')
    return (
        '<details class="aah-guidelines" open><summary><b>Guidelines for this run</b></summary>'
        f"{body}</details>"
    )


def guidelines_markdown(text: str | None) -> str:
    """The guidelines as Markdown for the terminal app (``""`` when none), cut as on the page."""
    if not text or not text.strip():
        return ""
    return shown_text(text)


__all__ = ["SHOWN_CHARS", "guidelines_html", "guidelines_markdown"]
