"""The Textual terminal app: run a task live, answer the agent, break its tools."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.ui.tui.app import AahApp
    from aah.ui.tui.terminal_input import tolerate_undecodable_input

__all__ = [
    "AahApp",
    "tolerate_undecodable_input",
]

_WHERE = {
    "AahApp": "aah.ui.tui.app",
    "tolerate_undecodable_input": "aah.ui.tui.terminal_input",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
