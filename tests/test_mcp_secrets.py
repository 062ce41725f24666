"""No secret of an MCP server's command line, URL or headers reaches any byte aah writes.

A key is passed as a reference to an environment variable (``--api-key
'$MY_KEY'``), read only when the server starts; a key written out is refused
with one line saying so. Headers for HTTP servers come from
``AAH_MCP_HEADERS``, never stored, recorded or printed.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from runtime_support import awareness_rule, call
from test_secrets import SHAPES

from aah.errors import AahError
from aah.secrets import REDACTED, scrub_text
from aah.testing.fake_llm import FakeLLMServer

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra: pip install 'aah[mcp]'")

from aah.mcp import McpConnections, McpFailure, parse_server  # noqa: E402

HERE = Path(__file__).resolve().parent
SERVERS = HERE / "mcp_servers.py"
SERVER = f"{shlex.quote(sys.executable)} {shlex.quote(str(SERVERS))} stdio"
KEY = "calcKeyValue-0123456789"

# Command lines and URLs holding a secret written out, and the secret (never in the error).
REFUSED: list[tuple[str, str]] = [
    ("npx server --api-key sk-abcdefghijklmnop1234", "abcdefghijklmnop1234"),
    ("server --api-key plainvalue99", "plainvalue99"),
    ("server --api-key=plainvalue99", "plainvalue99"),
    ("server --apikey plainvalue99", "plainvalue99"),
    ("server --token plainvalue99", "plainvalue99"),
    ("server --auth-token=plainvalue99", "plainvalue99"),
    ("server --access-token plainvalue99 --port 3", "plainvalue99"),
    ("server --client-secret plainvalue99", "plainvalue99"),
    ("server --password hunter2hunter", "hunter2hunter"),
    ("server -password=hunter2hunter", "hunter2hunter"),
    ("env GITHUB_PERSONAL_ACCESS_TOKEN=plainvalue99 server", "plainvalue99"),
    ("env -i API_KEY=plainvalue99 server", "plainvalue99"),
    ("env SLACK_BOT_TOKEN=${X}plainvalue99 server", "plainvalue99"),  # half a reference
    ("server ghp_abcdefghijklmnopqrstuvwxyz0123", "abcdefghijklmnopqrstuvwxyz0123"),
    ("server github_pat_11ABCDEFG0123456789_abcdefghijkl", "11ABCDEFG0123456789"),
    ("server glpat-abcdefghijklmnopqrst", "abcdefghijklmnopqrst"),
    ("server --slack xoxb-1234567890-abcdefghij", "1234567890-abcdefghij"),
    ("server AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNOP"),
    ("server AIzaSyA1234567890abcdefghijklmnopqrstuv", "SyA1234567890abcdefghijklmnopqrstuv"),
    ("server --stripe sk_live_abcdefghijklmnop1234", "abcdefghijklmnop1234"),
    ("server --header 'Authorization: Bearer abcdefgh12345678'", "abcdefgh12345678"),
    ("""server --config '{"api_key": "plainvalue99"}'""", "plainvalue99"),
    ("server https://h/x?access_token=zz99zz99", "zz99zz99"),
    ("GITHUB_TOKEN=abcdefgh1234 server", "abcdefgh1234"),
    ("https://user:pass1234word@mcp.example.com/mcp", "pass1234word"),
    ("https://tok_abcdefgh12345@mcp.example.com/mcp", "tok_abcdefgh12345"),
    ("https://mcp.example.com/mcp?api_key=plainvalue99", "plainvalue99"),
    ("http://127.0.0.1:8000/mcp?access_token=zz99zz99&x=1", "zz99zz99"),
]
# The scrubber's own corpus (tests/test_secrets.py), each text as a server's argument.
SCRUBBER_SHAPES = [
    pytest.param(env, f"server --note {shlex.quote(text)}", gone, id=f"shape{i}")
    for i, (env, text, gone) in enumerate(SHAPES)
]
# Command lines with no secret written out: references, counts, files, plain words.
ALLOWED = [
    "uvx mcp-server-time --local-timezone UTC",
    "server --api-key '$MY_KEY'",
    "server --api-key=${MY_KEY}",
    "server --token $MY_TOKEN --port 8000",
    "env GITHUB_PERSONAL_ACCESS_TOKEN=$GH_PAT npx -y @modelcontextprotocol/server-github",
    "server --max-tokens 4096",
    "server --token-file /run/secrets/token",
    "server --auth none",
    "server --password-stdin --verbose",
    "python -m server --port 8000",
    "server --greeting 'Token budget exhausted after a long talk'",
    "https://mcp.example.com/mcp",
    "https://mcp.example.com/mcp?api_key=$MY_KEY",
    "http://127.0.0.1:8000/mcp?page=2",
]


@pytest.mark.parametrize(("target", "secret"), REFUSED)
def test_a_secret_written_out_is_refused_in_one_line(target: str, secret: str) -> None:
    with pytest.raises(AahError) as caught:
        parse_server(target)
    message = str(caught.value)
    assert secret not in message and "\n" not in message
    assert "environment variable" in message or "AAH_MCP_HEADERS" in message


@pytest.mark.parametrize(("env", "target", "gone"), SCRUBBER_SHAPES)
def test_every_shape_the_scrubber_knows_is_refused(
    env: dict[str, str], target: str, gone: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(AahError) as caught:
        parse_server(target)
    assert gone not in str(caught.value)


@pytest.mark.parametrize("target", ALLOWED)
def test_commands_without_a_secret_written_out_are_kept(target: str) -> None:
    assert parse_server(target).target == target.strip()


@pytest.mark.parametrize(
    "text",
    [
        "ghp_abcdefghijklmnopqrstuvwxyz0123",
        "github_pat_11ABCDEFG0123456789_abcdefghijkl",
        "glpat-abcdefghijklmnopqrst",
        "xoxb-1234567890-abcdefghij",
        "AKIAABCDEFGHIJKLMNOP",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "sk_live_abcdefghijklmnop1234",
    ],
)
def test_the_scrubber_knows_the_keys_mcp_servers_take(text: str) -> None:
    assert scrub_text(f"started with {text} today") == f"started with {REDACTED} today"


def test_a_reference_is_read_when_the_server_starts_and_its_value_scrubbed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CALC_KEY", KEY)
    server = parse_server(f"calc={SERVER} --api-key '$CALC_KEY'")
    assert "$CALC_KEY" in server.target and KEY not in server.target
    pool = McpConnections(start_timeout=60, call_timeout=30)
    try:
        reply = pool.call(server, "key_ends", {})
    finally:
        pool.close()
    assert reply.content[0]["text"] == KEY[-4:]  # the server got the value
    assert KEY not in (scrub_text(f"the server said {KEY}") or "")


def test_a_reference_to_a_variable_not_set_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    pool = McpConnections(start_timeout=30, call_timeout=30)
    try:
        with pytest.raises(McpFailure, match="needs the environment variable NOT_SET_ANYWHERE"):
            pool.list_tools(parse_server(f"calc={SERVER} --api-key '$NOT_SET_ANYWHERE'"))
    finally:
        pool.close()


def aah(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    full_env.update({"COLUMNS": "200", "NO_COLOR": "1", "PYTHONPATH": str(HERE.parent), **env})
    return subprocess.run(
        [sys.executable, "-m", "aah", *args],
        text=True, capture_output=True, env=full_env, timeout=180, cwd=cwd,
    )  # fmt: skip


def written_bytes(folder: Path) -> bytes:
    """Every byte of every file under ``folder``."""
    return b"".join(path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file())


def test_add_mcp_refuses_a_key_and_stores_a_reference(shared_data: Path, tmp_path: Path) -> None:
    env = {"AAH_REGISTRY": str(tmp_path / "registry.db"), "AAH_MCP_START_TIMEOUT": "60"}
    refused = aah(
        "tools", "add-mcp", "calc", "--", sys.executable, str(SERVERS), "stdio",
        "--api-key", KEY, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith("error: MCP server calc: the value after --api-key")
    assert len(refused.stderr.strip().splitlines()) == 1 and KEY not in refused.stderr
    assert not (tmp_path / "registry.added.json").exists()
    added = aah(
        "tools", "add-mcp", "calc", "--data", str(shared_data), "--", sys.executable,
        str(SERVERS), "stdio", "--api-key", "$CALC_KEY", env={**env, "CALC_KEY": KEY}, cwd=tmp_path,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    stored = (tmp_path / "registry.added.json").read_text(encoding="utf-8")
    assert "$CALC_KEY" in stored
    assert KEY.encode() not in written_bytes(tmp_path)


# --- headers for HTTP servers: AAH_MCP_HEADERS ------------------------------------------


def test_headers_reach_an_http_server_and_no_file_aah_writes(tmp_path: Path) -> None:
    from test_mcp_serve import TOKEN, http_server

    with http_server(tmp_path / "desk" / "desk.db") as url:
        headers = json.dumps({"desk": {"Authorization": f"Bearer {TOKEN}"}})
        # Without the header the desk refuses: one line, naming the server.
        pool = McpConnections(start_timeout=30, call_timeout=30)
        try:
            with pytest.raises(McpFailure, match=r"^MCP server desk at http"):
                pool.list_tools(parse_server(url, name="desk"))
        finally:
            pool.close()
        script = {
            "rules": [
                awareness_rule("YES: I have what I need."),
                {"when": {"last_tool_name": "desk__request_approval"}, "reply": "Done."},
                {
                    "when": {"has_tools": True},
                    "reply": call(
                        "desk__request_approval",
                        tool="deploy", arguments={"branch": "main"}, deadline=0.5,
                    ),
                },
            ]
        }  # fmt: skip
        work = tmp_path / "work"
        work.mkdir()
        with FakeLLMServer(script) as llm:
            env = {
                "AAH_BASE_URL": llm.base_url,
                "AAH_MODEL": "fake-model",
                "AAH_CACHE_DIR": str(work / "cache"),
                "AAH_REGISTRY": str(work / "registry.db"),
                "AAH_MCP_HEADERS": headers,
            }
            ran = aah(
                "run", "Deploy main", "--mcp", f"desk={url}", "--http", "record", "--no-aah",
                "--db", str(work / "run.db"), env=env, cwd=work,
            )  # fmt: skip
            assert ran.returncode == 0, ran.stderr
            added = aah("tools", "add-mcp", "desk", "--", url, env=env, cwd=work)
            assert added.returncode == 0, added.stderr
            broken = aah(
                "run", "Deploy main", "--mcp", f"desk={url}", "--no-aah",
                "--db", str(work / "broken.db"),
                env={**env, "AAH_MCP_HEADERS": '{"desk": "Bearer ' + TOKEN + '"}'}, cwd=work,
            )  # fmt: skip
    assert "desk__request_approval" in ran.stdout and "timed_out" in ran.stdout
    assert broken.returncode == 2
    assert broken.stderr.startswith("error: AAH_MCP_HEADERS maps server names")
    printed = ran.stdout + ran.stderr + added.stdout + added.stderr + broken.stderr
    assert TOKEN not in printed
    assert TOKEN.encode() not in written_bytes(work)  # store, recordings, registry, logs
