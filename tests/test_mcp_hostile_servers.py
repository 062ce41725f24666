"""MCP servers that attack the agent's side through their tool lists: real servers, the real client.

Each server in ``tests/mcp_servers.py`` is written with the SDK (or, where the
SDK's own server would not write it, as raw JSON-RPC) and started over stdio
(and streamable HTTP for the biggest list). What aah takes of a list is
bounded: at most ``MAX_TOOLS`` tools a server, a bounded number of pages,
descriptions cut, schemas checked; names are offered as shown and sent as
the server spells them; a list aah cannot read is one line saying why.
"""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_servers import ENDLESS_PAGE, HOSTILE_NAMES
from runtime_support import awareness_rule, call
from test_mcp_tools import aah, free_port, model_env, tool_events

from aah.testing.fake_llm import FakeLLMServer

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra: pip install 'aah[mcp]'")

from aah.mcp import (  # noqa: E402 - after the skip, which needs the SDK
    MAX_TOOLS,
    McpConnections,
    McpFailure,
    MessageBounds,
    ToolChoice,
    ToolListing,
    open_mcp_tools,
    parse_server,
    read_tool_specs,
    shown_name,
)
from aah.mcp.listing import MAX_DESCRIPTION_CHARS, MAX_LIST_PAGES  # noqa: E402

SERVERS = Path(__file__).resolve().parent / "mcp_servers.py"


def hostile(kind: str, *args: str, name: str = "evil") -> str:
    return (
        f"{name}={shlex.quote(sys.executable)} {shlex.quote(str(SERVERS))} {kind} {' '.join(args)}"
    )


@pytest.fixture
def pool() -> Iterator[McpConnections]:
    connections = McpConnections(start_timeout=60, call_timeout=60)
    try:
        yield connections
    finally:
        connections.close()


# --- how much of a list is taken ----------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "args", "pages_at_most"),
    [
        ("many", ("5000",), 1),  # one page of 5,000
        ("endless", (), -(-MAX_TOOLS // ENDLESS_PAGE)),  # a cursor that never ends
    ],
)
def test_a_server_offering_too_many_tools_gives_the_first_cap_and_a_line_saying_so(
    pool: McpConnections, kind: str, args: tuple[str, ...], pages_at_most: int
) -> None:
    listing = pool.read_tools(parse_server(hostile(kind, *args)))
    assert len(listing.tools) == MAX_TOOLS and listing.pages <= pages_at_most
    [line] = listing.notes
    assert f"aah took the first {MAX_TOOLS}" in line and "--mcp-tools 'evil__PATTERN'" in line
    assert "aah tools add-mcp evil" in line


def test_an_endless_cursor_that_offers_nothing_chosen_stops_at_the_page_bound(
    pool: McpConnections,
) -> None:
    choice = ToolChoice(("nothing_is_called_this",))
    listing = pool.read_tools(parse_server(hostile("endless")), choice)
    assert listing.tools == [] and listing.pages == MAX_LIST_PAGES
    assert any(f"went on past {MAX_LIST_PAGES} pages" in note for note in listing.notes)


def test_a_cursor_that_comes_back_ends_the_list() -> None:
    listing = ToolListing("evil", ToolChoice(("none",)))
    for _ in range(3):
        listing.add_page(["a"], lambda index: {"name": "a"})
        if not listing.next_page("same cursor"):
            break
    assert listing.pages == 2 and "a cursor came back" in listing.notes[0]


@pytest.mark.parametrize(
    ("patterns", "expected"),
    [
        (("evil__tool_1?",), [f"tool_1{i}" for i in range(10)]),  # one server, by its full name
        (("tool_4?",), [f"tool_4{i}" for i in range(10)]),  # every server, by the tool's name
        (("other__*", "tool_7"), ["tool_7"]),  # another server's pattern chooses none of these
    ],
)
def test_mcp_tools_patterns_choose_among_the_offered_tools(
    pool: McpConnections, patterns: tuple[str, ...], expected: list[str]
) -> None:
    listing = pool.read_tools(parse_server(hostile("many", "500")), ToolChoice(patterns))
    assert [tool["name"] for tool in listing.tools] == expected and listing.notes == []


def test_a_ten_megabyte_description_is_cut() -> None:
    # A message cap that lets a ten-megabyte list in (the default refuses it: below).
    roomy = McpConnections(
        start_timeout=60, call_timeout=60, bounds=MessageBounds(20_000_000, 40_000_000)
    )
    try:
        listing = roomy.read_tools(parse_server(hostile("long_description")))
    finally:
        roomy.close()
    wordy = next(tool for tool in listing.tools if tool["name"] == "wordy")
    assert len(wordy["description"]) == MAX_DESCRIPTION_CHARS


def test_a_list_past_the_message_cap_is_refused_in_one_line(pool: McpConnections) -> None:
    with pytest.raises(McpFailure) as caught:
        pool.read_tools(parse_server(hostile("long_description")))
    assert str(caught.value).startswith("MCP server evil sent more than 4,000,000 bytes") and str(
        caught.value
    ).endswith(": raise AAH_MCP_MAX_MESSAGE_BYTES")


def test_a_schema_past_the_nesting_bound_leaves_its_tool_out(pool: McpConnections) -> None:
    # 60 levels of object-in-properties: 121 levels of JSON, which the SDK still reads.
    listing = pool.read_tools(parse_server(hostile("deep", "60")))
    assert [tool["name"] for tool in listing.tools] == ["flat"]
    assert listing.notes == [
        "MCP server evil: left out tool 'deep': its input schema nests deeper than 100 "
        "levels: flatten it"
    ]


# --- a list aah cannot read is one line saying why -------------------------------------------

UNREADABLE = [
    ("deep", ("1000",), "evil sent JSON nested deeper than 150 levels: aah does not read it"),
    ("deep", ("200",), "evil sent JSON nested deeper than 150 levels: aah does not read it"),
    ("not_a_list", (), "evil's tool list could not be read: tools: Input should be a valid list"),
]


@pytest.mark.parametrize(("kind", "args", "said"), UNREADABLE)
def test_an_unreadable_list_says_what_happened_instead_of_waiting(
    kind: str, args: tuple[str, ...], said: str
) -> None:
    # A deadline far past the test's own: waiting for it would be the old failure.
    pool = McpConnections(start_timeout=60, call_timeout=600)
    try:
        with pytest.raises(McpFailure) as caught:
            pool.read_tools(parse_server(hostile(kind, *args)))
    finally:
        pool.close()
    assert said in str(caught.value) and "\n" not in str(caught.value)
    assert str(caught.value).startswith("MCP server evil")


def test_the_cli_says_an_unreadable_list_in_one_line(tmp_path: Path) -> None:
    env = {"AAH_MCP_START_TIMEOUT": "60", "AAH_MCP_TIMEOUT": "600", "AAH_BASE_URL": "http://x"}
    result = aah(
        "run", "hi", "--mcp", hostile("deep", "1000"), "--no-aah",
        "--db", str(tmp_path / "a.db"), env={**env, "AAH_MODEL": "m"}, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "nested deeper than 150 levels" in result.stderr


# --- names as shown, sent as the server spells them --------------------------------------------


def test_every_name_is_offered_as_shown_and_no_two_alike(pool: McpConnections) -> None:
    server = parse_server(hostile("names"))
    made = read_tool_specs(server, pool.list_tools(server))
    offered = [spec.qualified_name for spec in made.specs]
    assert len(set(offered)) == len(offered)
    for spec in made.specs:
        assert spec.name == shown_name(spec.name) and spec.name.isprintable()
        names = [param.name for param in spec.parameters]
        assert len(set(names)) == len(names)
        assert all(name == shown_name(name) and name for name in names)
        assert spec.source.id in HOSTILE_NAMES
    assert offered == [
        "evil__ansi_red",
        "evil__belltool",
        "evil__zerowidth",
        "evil__same_2",  # 'sa\x07me' shows as 'same', which the clean 'same' keeps
        "evil__same",
        "evil__dot_ted",
        "evil__dot_ted_2",
    ]
    notes = "\n".join(made.notes)
    assert "'sa\\x07me' shows like another: it is offered as 'same_2'" in notes
    assert "'x\\x07y' shows like another: it is offered as 'xy_2'" in notes
    assert "left out tool '\\x1b[0m': its name shows as nothing" in notes


CALLS = [
    ("ansi\x1b[31m_red", {"plain": "p", "color": "c"}),
    ("bell\x07tool", {"tab bed": "2"}),
    ("zero\u200bwidth", {"zwj": "1", "zwj_2": "2"}),
    ("sa\x07me", {"xy": "1", "xy_2": "2"}),
]


@pytest.mark.parametrize(("raw_tool", "shown_arguments"), CALLS)
def test_a_call_with_the_shown_names_reaches_the_server_with_its_own(
    raw_tool: str, shown_arguments: dict[str, str]
) -> None:
    server = parse_server(hostile("names"))
    with open_mcp_tools([server]) as tools:
        spec = next(s for s in tools.specs if s.source.id == raw_tool)
        result = tools.executor.call(spec, shown_arguments)
    assert result.ok, result.text
    arrived = json.loads(result.text)["arguments"]
    # Every value arrived, each under one of the server's own names for that tool.
    assert sorted(arrived.values()) == sorted(shown_arguments.values())
    assert set(arrived) <= set(HOSTILE_NAMES[raw_tool])


def test_the_agent_calls_a_tool_by_its_shown_names_end_to_end(tmp_path: Path) -> None:
    script = {
        "rules": [
            awareness_rule("YES: I have the tool."),
            {"when": {"last_tool_name": "evil__ansi_red"}, "reply": "Done."},
            {"when": {"has_tools": True}, "reply": call("evil__ansi_red", plain="p", color="c")},
        ]
    }
    with FakeLLMServer(script) as llm:
        result = aah(
            "run", "Paint it", "--mcp", hostile("names"), "--no-aah",
            "--db", str(tmp_path / "a.db"), env=model_env(llm, tmp_path),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    [event] = tool_events(tmp_path / "a.db")
    assert event.ok, event.result
    assert json.loads(event.result or "")["arguments"] == {"col\x1b[1mor": "c", "plain": "p"}
    assert "\x1b" not in result.stdout and "\x1b" not in result.stderr


# --- the run's face: the cap's line, the header, the filter -------------------------------------


def header(stdout: str) -> str:
    return stdout[stdout.index("tools:") : stdout.index("; model:")]


@pytest.mark.parametrize(
    ("flags", "setting", "offered", "capped"),
    [
        ((), None, MAX_TOOLS, True),
        (("--mcp-tools", "evil__tool_1*"), None, 111, False),
        ((), ["tool_2?"], 10, False),  # AAH_MCP_TOOLS, as --mcp-tools
        (("--mcp-tools", "tool_*"), ["nothing"], MAX_TOOLS, True),
    ],
)
def test_a_run_shows_the_cap_and_a_short_header(
    tmp_path: Path,
    flags: tuple[str, ...],
    setting: list[str] | None,
    offered: int,
    capped: bool,
) -> None:
    script: dict[str, Any] = {"rules": [awareness_rule("YES: fine."), {"reply": "Done."}]}
    with FakeLLMServer(script) as llm:
        env = model_env(llm, tmp_path)
        if setting is not None:
            env["AAH_MCP_TOOLS"] = json.dumps(setting)
        result = aah(
            "run", "hi", "--mcp", hostile("many", "1000"), *flags, "--no-aah",
            "--db", str(tmp_path / "a.db"), env=env,
        )  # fmt: skip
        bound = [len(r["tools"]) for r in llm.requests if r.get("tools")]
    assert result.returncode == 0, result.stderr
    assert bound and set(bound) == {offered}
    assert (f"aah took the first {MAX_TOOLS}" in result.stderr) is capped
    shown = header(result.stdout)
    assert shown.count("evil__") == min(offered, 20)
    assert (f"and {offered - 20:,} more" in shown) is (offered > 20)


def test_an_empty_mcp_tools_pattern_is_refused_in_one_line(tmp_path: Path) -> None:
    result = aah("run", "hi", "--mcp", hostile("names"), "--mcp-tools", " ", env={})
    assert result.returncode == 2 and "empty --mcp-tools pattern" in result.stderr
    assert result.stderr.count("\n") == 1


# --- over streamable HTTP too ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def many_over_http() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVERS), "http-many", "3000", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_cap_holds_over_streamable_http(pool: McpConnections, many_over_http: str) -> None:
    listing = pool.read_tools(parse_server(f"evil={many_over_http}"))
    assert len(listing.tools) == MAX_TOOLS and listing.offered == 3000
    assert "offers 3,000 tools" in listing.notes[0]


# --- the registry: add-mcp records shown names, and a recorded tool is called right ------------


def test_add_mcp_records_shown_names_and_calls_with_the_servers_own(
    shared_data: Path, tmp_path: Path
) -> None:
    registry = tmp_path / "registry.db"
    env = {"AAH_REGISTRY": str(registry), "AAH_MCP_START_TIMEOUT": "60"}
    added = aah(
        "tools", "add-mcp", "evil", "--data", str(shared_data), "--",
        sys.executable, str(SERVERS), "names", env=env,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert "evil__ansi_red" in added.stdout and "\x1b" not in added.stdout + added.stderr
    assert "shows like another" in added.stderr
    script = {
        "rules": [
            awareness_rule("YES: I have the tool."),
            {"when": {"last_tool_name": "evil__same_2"}, "reply": "Done."},
            {"when": {"has_tools": True}, "reply": call("evil__same_2", xy="1", xy_2="2")},
        ]
    }
    with FakeLLMServer(script) as llm:
        ran = aah(
            "run", "Same?", "--tool", "evil__same_2", "--no-aah",
            "--db", str(tmp_path / "a.db"), env={**model_env(llm, tmp_path), **env},
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    [event] = tool_events(tmp_path / "a.db")
    assert json.loads(event.result or "")["arguments"] == {"x\x07y": "2", "xy": "1"}
