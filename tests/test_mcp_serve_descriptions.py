"""What ``aah mcp serve`` shows a client's model: each tool's description and input schema.

The SDK's own client lists the tools of a real ``aah mcp serve`` over stdio.
A description documents exactly the arguments the schema offers: never a
parameter the server fills in itself (its request context).
"""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra: pip install 'aah[mcp]'")

from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SERVE_ENV = {"PYTHONPATH": str(ROOT), "AAH_MCP_START_TIMEOUT": "60"}
# Words that only the server's side of a tool would use.
INTERNAL = re.compile(r"\bctx\b|\bContext\b|filled in by the server|RequestContext")


async def listed_tools(db: Path) -> list[Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "aah", "mcp", "serve", "--db", str(db)],
        env=SERVE_ENV,
        cwd=str(db.parent),
    )
    async with Client(stdio_client(params)) as client:
        return list((await client.list_tools()).tools)


def documented_arguments(description: str) -> list[str]:
    """The names a Google-style ``Args:`` section of ``description`` documents."""
    names: list[str] = []
    section = ""
    for line in description.splitlines():
        if line and not line[0].isspace():
            section = line.strip()
        elif section == "Args:" and (named := re.match(r"^\s+(\w+)(?: \([^)]*\))?:", line)):
            if len(line) - len(line.lstrip()) == 4:  # an entry, not a continuation
                names.append(named[1])
    return names


def test_each_tool_documents_exactly_the_arguments_its_schema_offers(tmp_path: Path) -> None:
    tools = asyncio.run(listed_tools(tmp_path / "desk.db"))
    assert {tool.name for tool in tools} >= {"ask_human", "request_approval"}
    for tool in tools:
        description = tool.description or ""
        offered = list(tool.input_schema.get("properties", {}))
        assert description.strip(), tool.name
        assert documented_arguments(description) == offered, (tool.name, description)
        assert not INTERNAL.search(description), (tool.name, description)
        assert "ctx" not in offered, (tool.name, offered)
        defined = list(tool.input_schema.get("$defs", {}))
        assert not [name for name in defined if "Context" in name], (tool.name, defined)
        # A description reads as text, not as an indented docstring.
        assert not description.startswith((" ", "\n")) and "\n        " not in description


def test_the_corpus_of_argument_sections() -> None:
    text = (
        "Do it.\n\nArgs:\n    question: What.\n        More of what.\n"
        "    id (str): An id.\n\nReturns:\n    tool: not an argument.\n"
    )
    assert documented_arguments(text) == ["question", "id"]
    assert documented_arguments("No sections at all.") == []
