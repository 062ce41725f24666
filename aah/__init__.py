"""aah (Ask-and-Help): a human-in-the-loop runtime for tool-using LLM agents."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    __version__: str

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    # The version is read from the installed metadata on first use only:
    # importlib.metadata costs every command ~25 ms of start-up CPU.
    if name != "__version__":
        raise AttributeError(f"module 'aah' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("aah")
    except PackageNotFoundError:  # running from a source tree that was never installed
        found = "0.0.0+unknown"
    globals()["__version__"] = found
    return found
