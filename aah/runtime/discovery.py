"""Tools the agent discovers as it goes: ``find_tools`` over the registry.

A session with discovery on offers ``find_tools(need)``. Each call searches
the registry (``Registry.search``), leaves out the endpoints the session may
not find (those a benchmark setting removed, the builtin tools), and the
endpoints returned join the session's tools for the rest of the session. The
list of discovered endpoints lives in the graph's state (``AgentState``), so
it is checkpointed with the conversation and survives parking for a person,
a restart and ``aah sessions resume``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

from aah.config import DEFAULT_DISCOVER_K
from aah.tools import BUILTIN_TOOLS, EndpointSpec, tool_prompt
from aah.tools.calls import one_line_description
from aah.tools.registry import Registry


class FoundTools(NamedTuple):
    """What one ``find_tools`` call found.

    Attributes:
        hits: The endpoints returned, best first.
        added: The names of those that were not among the session's tools yet.
        feedback: The tool result the model reads.
    """

    hits: list[EndpointSpec]
    added: list[str]
    feedback: str


class ToolFinder:
    """Searches the registry for a need, never returning a removed endpoint.

    Args:
        registry: The compiled registry searched.
        k: How many endpoints one call returns.
        removed: Endpoints the session may not find (a setting's unavailable
            ones): they are neither returned nor named in any feedback.
    """

    def __init__(
        self, registry: Registry, k: int = DEFAULT_DISCOVER_K, removed: Collection[str] = ()
    ) -> None:
        """Find up to ``k`` endpoints a call in ``registry``, minus ``removed``."""
        if k < 1:
            raise ValueError("find_tools returns at least one endpoint (k >= 1)")
        self.registry = registry
        self.k = k
        self.removed = frozenset(removed)

    def find(self, need: str) -> list[EndpointSpec]:
        """The ``k`` endpoints that best match ``need``, best first, removed ones left out."""
        # Asked for more than k, so that removing some still leaves k.
        hits = self.registry.search(need, self.k + len(self.removed))
        allowed = [hit.spec for hit in hits if self.findable(hit.spec.qualified_name)]
        return allowed[: self.k]

    def findable(self, name: str) -> bool:
        """Whether ``name`` is an endpoint this session could discover."""
        return name not in self.removed and name not in BUILTIN_TOOLS and name in self.registry

    def discover(self, need: str, known: Collection[str]) -> FoundTools:
        """Search for ``need``; ``known`` are the session's tools before this call."""
        hits = self.find(need)
        added = [spec.qualified_name for spec in hits if spec.qualified_name not in known]
        if not hits:
            return FoundTools([], [], tool_prompt("found_no_tools").render(need=need))
        lines = "\n".join(f"- {spec.qualified_name}: {one_line_description(spec)}" for spec in hits)
        return FoundTools(hits, added, tool_prompt("found_tools").render(need=need, lines=lines))
