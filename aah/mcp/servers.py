"""Which MCP server a user means: a command to start (stdio) or a URL (streamable HTTP)."""

from __future__ import annotations

import re
import shlex
from pathlib import PurePath
from typing import NamedTuple
from urllib.parse import urlsplit

from aah.errors import AahError
from aah.tools import EndpointSpec

# A server name becomes the tool part of ``NAME__tool``: the same characters.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
MCP_URL_SCHEME = "mcp"


class McpServer(NamedTuple):
    """One MCP server: the name its tools carry and how to reach it.

    Attributes:
        name: The prefix of its tools' names (``NAME__tool``).
        target: A command line (started, spoken to over stdio) or an
            ``http(s)://`` URL (streamable HTTP).
    """

    name: str
    target: str

    @property
    def is_http(self) -> bool:
        """Whether the server is reached over streamable HTTP."""
        return self.target.startswith(("http://", "https://"))

    @property
    def argv(self) -> list[str]:
        """The command line, split as a shell would (stdio servers)."""
        return shlex.split(self.target)


def parse_server(text: str, name: str | None = None) -> McpServer:
    """An ``--mcp`` value as a server: ``'CMD ARGS'``, ``URL`` or ``NAME=CMD-or-URL``.

    Without a name, one is made from the command's program name or the URL's host.

    Raises:
        AahError: the value is empty, its quotes do not close, or the name is not usable.
    """
    text = text.strip()
    head, equals, rest = text.partition("=")
    if name is None and equals and not head.startswith(("http://", "https://")):
        if len(head.split()) <= 1:
            name, text = head.strip(), rest.strip()
    if not text:
        raise AahError("an MCP server needs a command or a URL: --mcp 'CMD ARGS' or --mcp URL")
    server = McpServer(name or "", text)
    if not server.is_http:
        try:
            argv = server.argv
        except ValueError as exc:
            raise AahError(f"cannot read the MCP command {text!r}: {exc}") from None
        if not argv:
            raise AahError("an MCP server needs a command or a URL: --mcp 'CMD ARGS' or --mcp URL")
    chosen = _default_name(server) if name is None else name
    if not _NAME.match(chosen):
        raise AahError(
            f"bad MCP server name {chosen!r}: use letters, digits, '_' or '-' "
            "(at most 40, e.g. --mcp 'time=uvx mcp-server-time')"
        )
    return server._replace(name=chosen)


def _default_name(server: McpServer) -> str:
    if server.is_http:
        base = urlsplit(server.target).hostname or "mcp"
    else:
        base = PurePath(server.argv[0]).name
        # `python -m pkg` and `uvx pkg`: the package says more than the runner.
        rest = [arg for arg in server.argv[1:] if not arg.startswith("-")]
        if base in ("uvx", "npx", "pipx", "python", "python3") and rest:
            base = PurePath(rest[0]).stem
    name = _UNSAFE.sub("_", base).strip("_-")[:40]
    return name or "mcp"


def unique_names(servers: list[McpServer]) -> list[McpServer]:
    """``servers`` with repeated names made distinct (``time``, ``time_2``...).

    Raises:
        AahError: two servers were given the same name explicitly and differ.
    """
    seen: dict[str, int] = {}
    named: list[McpServer] = []
    for server in dict.fromkeys(servers):
        count = seen.get(server.name, 0) + 1
        seen[server.name] = count
        named.append(server if count == 1 else server._replace(name=f"{server.name}_{count}"))
    return named


def server_of(spec: EndpointSpec) -> McpServer:
    """The server that serves an MCP tool spec (its ``source`` names it)."""
    return McpServer(spec.tool, spec.source.file)


def is_mcp_spec(spec: EndpointSpec) -> bool:
    """Whether ``spec`` is a tool of an MCP server rather than an HTTP endpoint."""
    return spec.source.kind == "mcp"
