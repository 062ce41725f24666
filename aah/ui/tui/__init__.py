"""The Textual terminal app: run a task live, answer the agent, break its tools."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.ui.tui.app import AahApp

__all__ = [
    "AahApp",
]

_WHERE = {
    "AahApp": "aah.ui.tui.app",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
