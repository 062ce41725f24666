"""A server's tool list, read within bounds: what aah takes of it, and what it says about the rest.

A server decides how many tools it lists, over how many pages, and how big
each one is; aah decides how much of that it reads. From one server it takes
at most :data:`MAX_TOOLS` tools (those ``--mcp-tools`` chooses, in the
server's order), reads at most :data:`MAX_LIST_PAGES` pages, cuts each
description at :data:`MAX_DESCRIPTION_CHARS` and leaves out a tool whose
input schema is bigger than :data:`MAX_SCHEMA_CHARS` or nests deeper than
:data:`~aah.bounds.MAX_NESTING` levels. What it did not take is said in a
line or two (:attr:`ToolListing.notes`), never silently.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aah.bounds import OutOfBounds, check_nesting
from aah.mcp.schema import quoted_name, shown_name
from aah.tools import NAME_SEPARATOR, qualified_name

# Tools the agent is offered from one server. Each costs the model a schema
# on every request; past this, --mcp-tools or find_tools choose among them.
MAX_TOOLS = 128
# Tools `aah tools add-mcp` records from one server: the registry offers
# them a few at a time (find_tools), so it may hold more.
MAX_REGISTRY_TOOLS = 2_000
# Pages of tools/list read from one server: a cursor that never ends stops here.
MAX_LIST_PAGES = 100
# Characters of a tool's description kept (the model reads 1,000 of them).
MAX_DESCRIPTION_CHARS = 4_000
# Characters of a tool's input schema, as JSON.
MAX_SCHEMA_CHARS = 100_000
# Lines saying which tools were left out, per server; then a count.
MAX_NOTES = 5


@dataclass(frozen=True)
class ToolChoice:
    """Which of a server's tools to take: globs on the names the agent sees.

    A pattern with ``__`` is matched against the whole name (``github__*issue*``
    chooses among one server's tools); one without is matched against the
    tool's own part, on every server (``*search*``). No pattern takes all.
    """

    patterns: tuple[str, ...] = ()

    def takes(self, server: str, raw_name: str) -> bool:
        """Whether the tool ``raw_name`` of ``server`` is chosen."""
        if not self.patterns:
            return True
        shown = shown_name(raw_name)
        whole = qualified_name(server, shown)
        return any(
            fnmatch.fnmatchcase(whole if NAME_SEPARATOR in pattern else shown, pattern)
            for pattern in self.patterns
        )


@dataclass
class ToolListing:
    """What aah took of one server's tool list, page by page.

    Attributes:
        server: The server's name (its tools' prefix).
        choice: Which tools to take.
        cap: The most tools taken.
        tools: Those taken, in JSON form, bounded (:func:`bounded_tool`).
        offered: Tools in the pages read.
        chosen: Of those, the ones ``choice`` takes.
        pages: Pages read.
        more: Chosen tools were left for the cap.
        unread: Pages were left unread for the cap.
        left_out: What was left out and why, a line each.
    """

    server: str
    choice: ToolChoice = field(default_factory=ToolChoice)
    cap: int = MAX_TOOLS
    tools: list[dict[str, Any]] = field(default_factory=list)
    offered: int = 0
    chosen: int = 0
    pages: int = 0
    more: bool = False
    unread: bool = False
    left_out: list[str] = field(default_factory=list)
    _cursors: set[str] = field(default_factory=set)

    @property
    def full(self) -> bool:
        """Whether the cap is reached: the pages left need not be read."""
        return len(self.tools) >= self.cap

    def add_page(self, names: Sequence[str], dump: Callable[[int], dict[str, Any]]) -> None:
        """Take what the cap and the choice allow of one page.

        Args:
            names: The page's tool names, in order.
            dump: The JSON form of the page's tool at an index (called only
                for tools taken, so the rest are never copied).
        """
        self.pages += 1
        for index, name in enumerate(names):
            self.offered += 1
            if not name or not self.choice.takes(self.server, name):
                continue
            self.chosen += 1
            if self.full:
                self.more = True
                continue
            try:
                self.tools.append(bounded_tool(dump(index)))
            except OutOfBounds as exc:
                self.left_out.append(f"left out tool {quoted_name(name)}: {exc}")

    def next_page(self, cursor: str | None) -> bool:
        """Whether to read the page at ``cursor`` (None: the list ended)."""
        if cursor is None:
            return False
        if self.full:
            self.more = self.unread = True
            return False
        if cursor in self._cursors or self.pages >= MAX_LIST_PAGES:
            self.left_out.append(
                f"its tool list went on past {self.pages} pages"
                + (" (a cursor came back)" if cursor in self._cursors else "")
                + f": aah read {self.offered:,} tools and stopped"
            )
            return False
        self._cursors.add(cursor)
        return True

    @property
    def notes(self) -> list[str]:
        """One line per thing not taken (at most :data:`MAX_NOTES`, then a count)."""
        lines = [f"MCP server {self.server}: {line}" for line in self.left_out[:MAX_NOTES]]
        if len(self.left_out) > MAX_NOTES:
            lines.append(
                f"MCP server {self.server}: and {len(self.left_out) - MAX_NOTES:,} more left out"
            )
        if self.more:
            lines.append(self._cap_line())
        return lines

    def _cap_line(self) -> str:
        offered = f"{'more than ' if self.unread else ''}{self.offered:,}"
        chosen = f" ({self.chosen:,} of them chosen by --mcp-tools)"
        matching = chosen if self.choice.patterns else ""
        return (
            f"MCP server {self.server} offers {offered} tools{matching}: aah took the first "
            f"{len(self.tools):,} (its cap per server); choose others with --mcp-tools "
            f"'{self.server}{NAME_SEPARATOR}PATTERN', or record them all for find_tools "
            f"with `aah tools add-mcp {self.server} -- CMD`"
        )


def bounded_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """``tool`` (JSON form) with its description cut and its input schema checked.

    Raises:
        OutOfBounds: its input schema nests too deep or is too big.
    """
    description = tool.get("description")
    if isinstance(description, str) and len(description) > MAX_DESCRIPTION_CHARS:
        tool["description"] = description[: MAX_DESCRIPTION_CHARS - 1] + "…"
    schema = tool.get("inputSchema")
    check_nesting(schema, "its input schema")
    size = len(json.dumps(schema, ensure_ascii=False, default=str))
    if size > MAX_SCHEMA_CHARS:
        raise OutOfBounds(
            f"its input schema is {size:,} characters, over aah's cap of {MAX_SCHEMA_CHARS:,}"
        )
    return tool
