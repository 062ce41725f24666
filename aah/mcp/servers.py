"""Which MCP server a user means: a command to start (stdio) or a URL (streamable HTTP).

A server's command line or URL is stored (the registry's added tools, the
recipe of a session), so it must hold no secret: a key is written as a
reference to an environment variable (``--api-key '$MY_KEY'``), which is
read only when the server starts. A secret written out is refused.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import PurePath
from typing import NamedTuple
from urllib.parse import urlsplit

from aah.errors import AahError
from aah.secrets import MIN_SECRET_LENGTH, is_secret_name, remember_secret, scrub_text
from aah.storable import storable_text
from aah.tools import EndpointSpec

# A server name becomes the tool part of ``NAME__tool``: the same characters.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
MCP_URL_SCHEME = "mcp"
# ``$NAME`` or ``${NAME}``: an environment variable read when the server starts.
_REFERENCE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
# ``--name=value``, ``-name=value`` or ``NAME=value`` (an ``env`` assignment).
_NAMED_VALUE = re.compile(r"^-{0,2}([A-Za-z_][A-Za-z0-9_.\-]*)=(.*)$", re.DOTALL)
_FLAG = re.compile(r"^-{1,2}([A-Za-z][A-Za-z0-9_.\-]*)$")


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

    def started_argv(self) -> list[str]:
        """The command line with each ``$NAME`` replaced by that environment variable's value.

        Raises:
            AahError: a variable it names is not set.
        """
        parts = self.argv
        return [
            _expand(part, self.name, secret=_secret_position(parts, index))
            for index, part in enumerate(parts)
        ]

    def started_url(self) -> str:
        """The URL with each ``$NAME`` replaced by that environment variable's value.

        Raises:
            AahError: a variable it names is not set.
        """
        # A variable in a URL is there to carry a key: its value is kept out of every write.
        return _expand(self.target, self.name, secret=True)


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
    if is_secret_name(chosen):
        # ``TOKEN=abc cmd`` read as a server named TOKEN: an environment was meant.
        raise AahError(
            f"{chosen!r} names a secret, not a server: pass it through an environment "
            f"variable, as 'env {chosen}=$YOUR_VARIABLE CMD' (single quotes keep $ for aah)"
        )
    named = server._replace(name=chosen)
    where = secret_in(named)
    if where is not None:
        raise AahError(_refusal(named, where))
    return named


def secret_in(server: McpServer) -> str | None:
    """Where ``server``'s command line or URL holds a secret written out, or None.

    A secret is a value after (or in) a credential-named flag or assignment
    (``--api-key X``, ``--token=X``, ``GITHUB_TOKEN=X``), a key-shaped
    argument (``sk-...``, ``ghp_...``, ``Bearer ...``), a value aah knows as a
    secret, a credential-named query value, or a URL's user and password.
    References (``$NAME``) are names, not secrets. The answer never quotes the secret.
    """
    if server.is_http:
        parts = [server.target]
        try:
            split = urlsplit(_REFERENCE.sub("", server.target))
            if split.username or split.password:
                return "the user and password in the URL"
        except ValueError:
            return None  # an unreadable URL fails when it is reached, quoting nothing
    else:
        parts = server.argv
    for index, part in enumerate(parts):
        literal = _REFERENCE.sub("", part)
        named = _NAMED_VALUE.match(literal)
        if named is not None and _secret_value(named.group(1), named.group(2)):
            return f"the value of {named.group(1)}"
        flag = _FLAG.match(part)
        following = parts[index + 1] if index + 1 < len(parts) else ""
        if flag is not None and not following.startswith("-"):
            if _secret_value(flag.group(1), _REFERENCE.sub("", following)):
                return f"the value after {part}"
        if scrub_text(literal) != storable_text(literal):
            return (
                f"argument {index + 1}, which looks like a key"
                if len(parts) > 1
                else ("a key-shaped or credential-named value")
            )
    return None


def _secret_position(parts: list[str], index: int) -> bool:
    """Whether ``parts[index]`` is a credential's value: in or after a credential-named flag."""
    named = _NAMED_VALUE.match(parts[index])
    if named is not None and is_secret_name(named.group(1)):
        return True
    flag = _FLAG.match(parts[index - 1]) if index > 0 else None
    return flag is not None and is_secret_name(flag.group(1))


def _secret_value(name: str, value: str) -> bool:
    return is_secret_name(name) and len(value.strip()) >= MIN_SECRET_LENGTH


def _refusal(server: McpServer, where: str) -> str:
    """The one-line refusal of a secret written out, saying how to pass it instead."""
    if server.is_http:
        how = (
            "send it as a header from AAH_MCP_HEADERS "
            """('{"%s": {"Authorization": "Bearer ..."}}'), or write $YOUR_VARIABLE in its place"""
            % server.name
        )
    else:
        how = (
            "put it in an environment variable and write its name in its place, "
            "e.g. --api-key '$YOUR_VARIABLE' (single quotes: aah reads it as it starts the server)"
        )
    return f"MCP server {server.name}: {where} is a secret, which aah would store: {how}"


def _expand(text: str, server: str, *, secret: bool) -> str:
    """``text`` with its ``$NAME`` references read from the environment.

    A value read in a credential's place (``secret``), or from a
    credential-named variable, is remembered as a secret: a server that
    echoes it (an error line aah quotes) has it scrubbed.
    """

    def value(match: re.Match[str]) -> str:
        variable = match.group(1) or match.group(2)
        found = os.environ.get(variable)
        if found is None:
            raise AahError(
                f"MCP server {server} needs the environment variable {variable}: set it, "
                "or change the server's command"
            )
        if secret or is_secret_name(variable):
            remember_secret(found)
        return found

    return _REFERENCE.sub(value, text)


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
