"""aah (Ask-and-Help): a human-in-the-loop runtime for tool-using LLM agents."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("aah")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
