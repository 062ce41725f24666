"""What a reply's text holds: tool calls, a failed attempt at one, or neither."""

from __future__ import annotations

from typing import Any, NamedTuple


class TextCall(NamedTuple):
    """A call recovered from text."""

    name: str
    arguments: dict[str, Any]


class TextCallParse(NamedTuple):
    """What the text holds: calls, or a failed attempt (with the reason).

    ``form`` names the format the text used (``hermes``, ``pythonic``,
    ``mistral`` ...), so a probe can say which one a server writes.
    """

    calls: list[TextCall]
    invalid: str | None = None
    form: str | None = None

    @property
    def attempted(self) -> bool:
        """Whether the text tried to call a tool, well-formed or not."""
        return bool(self.calls) or self.invalid is not None


NO_CALL = TextCallParse([])


def broken(form: str, reason: str) -> TextCallParse:
    """A failed attempt in ``form``: the runtime answers it with ``reason`` as feedback."""
    return TextCallParse([], reason, form)
