"""Recorded MCP sessions: tool lists and call results kept in SQLite, for replay offline.

``--http record`` stores every server's tool list and every call's result;
``--http replay`` answers from them and never starts a server. A call is
found again by its server's name, its tool and its arguments (as canonical
JSON), so a recording made on one machine replays on another where the
server's command differs. Everything stored passes through the one scrubber
of :mod:`aah.secrets` first.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from aah.config import get_settings
from aah.errors import AahError
from aah.mcp.connections import McpReply
from aah.secrets import scrub

MCP_CACHE_FILE_NAME = "mcp_cache.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS listings (server TEXT PRIMARY KEY, tools TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY, server TEXT NOT NULL, tool TEXT NOT NULL,
    arguments TEXT NOT NULL, reply TEXT NOT NULL
);
"""


def default_recording_path() -> Path:
    """``<cache_dir>/mcp_cache.sqlite``, beside the HTTP recordings."""
    return get_settings().cache_dir / MCP_CACHE_FILE_NAME


class McpRecording:
    """One recording file, opened for writing (record) or reading (replay).

    Raises:
        AahError: replay asked of a file that does not exist.
    """

    def __init__(self, path: Path, *, replay: bool) -> None:
        self.path = path
        self.replay = replay
        if replay:
            if not path.is_file():
                raise AahError(
                    f"no recorded MCP sessions at {path}: record first with `--http record`"
                )
            self._conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(path, check_same_thread=False)
            self._conn.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def save_tools(self, server: str, tools: list[dict[str, Any]]) -> None:
        """Keep ``server``'s tool list (replacing an older one)."""
        text = json.dumps(scrub(tools), ensure_ascii=False)
        with self._lock, self._conn:
            self._conn.execute("INSERT OR REPLACE INTO listings VALUES (?, ?)", (server, text))

    def tools(self, server: str) -> list[dict[str, Any]]:
        """``server``'s recorded tool list.

        Raises:
            AahError: the server's tools were never recorded.
        """
        with self._lock:
            row = self._conn.execute(
                "SELECT tools FROM listings WHERE server = ?", (server,)
            ).fetchone()
        if row is None:
            raise AahError(
                f"no recorded tool list for MCP server {server} in {self.path}: "
                "record first with `--http record`"
            )
        tools: list[dict[str, Any]] = json.loads(row[0])
        return tools

    def save_reply(
        self, server: str, tool: str, arguments: dict[str, Any], reply: McpReply
    ) -> None:
        """Keep the answer to one call (a later identical call replaces it)."""
        stored = scrub({"content": reply.content, "structured": reply.structured})
        stored["is_error"] = reply.is_error
        with self._lock, self._conn:
            self._conn.execute(
                "INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?, ?)",
                (
                    call_key(server, tool, arguments),
                    server,
                    tool,
                    json.dumps(scrub(arguments), ensure_ascii=False, sort_keys=True),
                    json.dumps(stored, ensure_ascii=False),
                ),
            )

    def reply(self, server: str, tool: str, arguments: dict[str, Any]) -> McpReply | None:
        """The recorded answer to this call, if it was recorded."""
        with self._lock:
            row = self._conn.execute(
                "SELECT reply FROM calls WHERE key = ?", (call_key(server, tool, arguments),)
            ).fetchone()
        if row is None:
            return None
        stored = json.loads(row[0])
        return McpReply(stored["content"], stored["structured"], bool(stored["is_error"]))

    def close(self) -> None:
        """Close the file."""
        self._conn.close()


def call_key(server: str, tool: str, arguments: dict[str, Any]) -> str:
    """The key a call is stored under: server, tool and canonical arguments, hashed.

    Arguments are scrubbed first, as they are stored: a recording made with
    one key replays for a run holding another.
    """
    canonical = json.dumps(
        [server, tool, scrub(arguments)], ensure_ascii=False, sort_keys=True, default=str
    )
    return hashlib.sha256(canonical.encode()).hexdigest()
