"""The command line, run as a user runs it: a subprocess, the fake model, no network."""

import importlib.util
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from runtime_support import ask_then_call_script

from aah.store.sessions import SessionStore
from aah.testing.fake_llm import FakeLLMServer
from aah.tools.registry import Registry
from aah.tools.registry.build import build_registry

WEATHER = "openmeteo__get_weather_forecast"


@pytest.fixture(scope="module")
def registry(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("registry") / "registry.db"
    build_registry(shared_data, path)
    return path


def aah(
    *args: str, env: dict[str, str] | None = None, stdin: str = "", timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    full_env.update({"COLUMNS": "200", "NO_COLOR": "1", **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "aah", *args],
        input=stdin,
        text=True,
        capture_output=True,
        env=full_env,
        timeout=timeout,
    )


def model_env(registry: Path, llm: FakeLLMServer, key: str) -> dict[str, str]:
    """The environment of a run against the fake model ``llm``, with tools from ``registry``."""
    return {
        "AAH_REGISTRY": str(registry),
        "AAH_BASE_URL": llm.base_url,
        "AAH_MODEL": "fake-model",
        "AAH_API_KEY": key,
    }


def test_help_lists_the_command_groups() -> None:
    result = aah("--help")
    assert result.returncode == 0
    for group in ("data", "tools", "run", "sessions", "demo", "fake-llm"):
        assert group in result.stdout


# What `aah --help` and the light commands must not load: each costs tens of
# milliseconds of start-up CPU (perf/startup.py); commands import them when they run.
HEAVY_AT_START_UP = [
    "aah.config",  # pydantic-settings
    "aah.testing",
    "aiohttp",
    "asyncio",
    "importlib.metadata",
    "langchain_core",
    "langgraph",
    "pydantic",
    "requests",
    "requests_cache",
    "rich.progress",
    "sqlite_utils",
    "urllib.request",
    "yaml",
]


def test_the_command_table_loads_no_heavy_module() -> None:
    code = "import sys, aah.cli; print(*sorted(sys.modules), sep='\\n')"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert [name for name in HEAVY_AT_START_UP if name in loaded] == []


# What the way to a bench run's first task must not load: the task reads no
# tool file and builds no LangChain tool (perf/startup.py).
NOT_BEFORE_THE_FIRST_TASK = [
    "aah.data.fetch",  # a named data folder needs no manifest
    "aah.tools.importers.failtalms",  # the importer's parsers
    "aah.tools.importers.loading",
    "langchain_core.tools",  # StructuredTool: the runtime sends JSON schemas
    "yaml",
]


def test_the_way_to_the_first_task_loads_no_importer_and_no_langchain_tool() -> None:
    modules = (
        "aah.cli.bench_run, aah.benchmark.batch, aah.benchmark.failtalms.runner,"
        " aah.benchmark.failtalms.dataset, aah.runtime.session, aah.data.locate"
    )
    code = f"import sys, {modules}; print(*sorted(sys.modules), sep='\\n')"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "aah.runtime.graph" in loaded  # the import reached the runtime
    assert [name for name in NOT_BEFORE_THE_FIRST_TASK if name in loaded] == []


# What a bench run of one task must not load, at any point: each is tens of
# milliseconds of start-up CPU that the run does not use (perf/startup.py
# prints where the rest goes).
NOT_IN_A_BENCH_RUN = [
    "aah.benchmark.bfcl.runner",  # other benchmarks' code: only their registry entries
    "aah.benchmark.when2call.runner",
    "aah.data.fetch",
    "aah.desk.team",
    "aah.report",
    "aah.scoring.metrics",
    "aah.telemetry.export",
    "aah.testing",
    "aah.tools.importers.failtalms",
    "aah.ui.tui",  # the faces
    "aah.ui.web",
    "gradio",
    "jinja2",
    "langchain_core.prompts",
    "langchain_core.tools",
    "langchain_openai",
    "langgraph.prebuilt",
    "mcp",
    "numpy",  # sqlite-utils would load it (aah.store.sqlite_db)
    "openai",
    "opentelemetry.exporter",
    "pandas",
    "psycopg",
    "ray",
    "requests_cache",
    "starlette",
    "textual",
    "uvicorn",
    "yaml",
]


def test_a_bench_run_loads_only_what_it_uses_and_leaves_its_heap_to_the_os(
    shared_data: Path, registry: Path, tmp_path: Path
) -> None:
    # Each name is a real module, or the check below would pass for a typo.
    assert all(importlib.util.find_spec(name) for name in NOT_IN_A_BENCH_RUN)
    # Registered before main's own exit handler, so it runs after it.
    code = (
        "import atexit, gc, sys\n"
        "def note():\n"
        f"    with open({str(tmp_path / 'modules.txt')!r}, 'w') as out:\n"
        "        print(gc.get_freeze_count() > 0, *sorted(sys.modules), sep='\\n', file=out)\n"
        "atexit.register(note)\n"
        "from aah.cli import main\n"
        "sys.argv = ['aah', *sys.argv[1:]]\n"
        "main()\n"
    )
    args = ["--setting", "underspecified", "--limit", "1", "--db", str(tmp_path / "s.db")]
    with FakeLLMServer({"rules": [{"reply": "Done: here is the answer."}]}) as llm:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
        env.update(model_env(registry, llm, "k") | {"AAH_DATA_DIR": str(shared_data)})
        done = subprocess.run(
            [sys.executable, "-c", code, "bench", "run", "--run", "r", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    frozen, *loaded = (tmp_path / "modules.txt").read_text().split()
    assert "aah.runtime.graph" in loaded  # the run reached the runtime
    assert [name for name in NOT_IN_A_BENCH_RUN if name in loaded] == []
    # The exit's last full collections skip what was alive at the end (aah.cli.main).
    assert frozen == "True"


def test_tools_search_json_puts_weather_first(registry: Path) -> None:
    result = aah(
        "tools", "search", "weather forecast", "--json", env={"AAH_REGISTRY": str(registry)}
    )
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert all(h["category"] == "Weather" for h in hits[:5])


def test_tools_show_and_list(registry: Path) -> None:
    env = {"AAH_REGISTRY": str(registry)}
    shown = json.loads(aah("tools", "show", WEATHER, "--json", env=env).stdout)
    assert shown["url_template"] == "https://api.open-meteo.com/v1/forecast"
    listed = json.loads(aah("tools", "list", "--category", "Weather", "--json", env=env).stdout)
    assert WEATHER in [item["name"] for item in listed]


def test_unknown_tool_is_one_line_with_suggestions(registry: Path) -> None:
    result = aah(
        "tools", "show", "openmeteo__get_weather_forcast", env={"AAH_REGISTRY": str(registry)}
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "did you mean" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_registry_is_built_from_the_data_first(shared_data: Path, tmp_path: Path) -> None:
    env = {"AAH_REGISTRY": str(tmp_path / "new.db"), "AAH_DATA_DIR": str(shared_data)}
    result = aah("tools", "search", "weather", "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert "building the tool registry" in result.stderr  # stdout stays pure JSON
    assert json.loads(result.stdout)[0]["category"] == "Weather"


def test_missing_registry_and_data_say_how_to_get_them(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {"AAH_REGISTRY": str(tmp_path / "none.db"), "AAH_DATA_DIR": str(empty)}
    result = aah("tools", "search", "x", env=env)
    assert result.returncode == 2 and "aah data fetch" in result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error:")


def test_run_with_a_console_human(registry: Path, tmp_path: Path) -> None:
    db = tmp_path / "aah.db"
    script = ask_then_call_script(WEATHER, {"latitude": 48.85, "longitude": 2.35})
    with FakeLLMServer(script) as llm:
        env = model_env(registry, llm, "sk-never-stored-0000")
        result = aah(
            "run",
            "What is the weather?",
            "--tool",
            WEATHER,
            "--human",
            "console",
            "--http",
            "mock",
            "--db",
            str(db),
            env=env,
            stdin="Paris\n",
        )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for expected in (
        "awareness (tool): IDK",
        "agent asks: Which city?",
        "console answers: Paris",
        f"✓ {WEATHER}",
        "final answer: Done: the forecast is above.",
    ):
        assert expected in out, out
    sessions = SessionStore(db).list_sessions()
    assert sessions[0].status == "finished" and sessions[0].n_human_questions == 1
    assert b"sk-never-stored-0000" not in db.read_bytes()
    shown = aah("sessions", "show", sessions[0].id[:8], "--db", str(db))
    assert "final answer" in shown.stdout


def test_run_without_a_model_says_what_to_set(tmp_path: Path) -> None:
    result = aah("run", "Hi", "--db", str(tmp_path / "a.db"))
    assert result.returncode == 2 and "AAH_MODEL" in result.stderr


def test_demo_runs_offline_without_a_key(registry: Path, tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    result = aah("demo", "--db", str(db), env={"AAH_REGISTRY": str(registry)})
    assert result.returncode == 0, result.stderr
    assert "scripted demo model — set AAH_BASE_URL to use a real one" in result.stdout
    statuses = {s.query[:20]: s.status for s in SessionStore(db).list_sessions()}
    assert sorted(statuses.values()) == ["finished", "finished", "finished", "skipped"]
    assert "agent asks" in result.stdout and "✗ Ronswanson__get_quote" in result.stdout


# A corpus of wrong invocations: each must give one `error:` line naming what
# was wrong and the --help to read, with exit status 2 and no boxed panel.
USAGE_ERRORS = [
    (
        ("bench", "run", "--foo"),
        "no such option: --foo (Possible options: --tools); see `python -m aah bench run --help`",
    ),
    (("bench", "run", "--run", "r", "--limit", "x"), "invalid value for '--limit'"),
    (("grade",), "missing option '--run'; see `python -m aah grade --help`"),
    (("tools", "show"), "missing argument 'name'"),
    (("nosuch",), "no such command 'nosuch'; see `python -m aah --help`"),
    (("sessions", "list", "--db", "a.db", "extra"), "unexpected extra argument"),
    (("web", "--port", "0"), "invalid value for '--port'"),
]


@pytest.mark.parametrize(("args", "expected"), USAGE_ERRORS)
def test_usage_errors_are_one_line_that_says_where_help_is(
    args: tuple[str, ...], expected: str
) -> None:
    result = aah(*args, env={"COLUMNS": "40"})
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert expected in result.stderr
    assert "╭" not in result.stderr and result.stdout == ""


def test_errors_and_notes_stay_one_line_in_a_narrow_terminal(
    registry: Path, shared_data: Path, tmp_path: Path
) -> None:
    narrow = {"COLUMNS": "40"}
    unknown = aah(
        "tools",
        "show",
        "openmeteo__get_weather_forcast",
        env={**narrow, "AAH_REGISTRY": str(registry)},
    )
    no_data = aah(
        "tools",
        "search",
        "x",
        env={**narrow, "AAH_REGISTRY": str(tmp_path / "no.db"), "AAH_DATA_DIR": str(tmp_path)},
    )
    no_model = aah("run", "Hi", "--db", str(tmp_path / "a.db"), env=narrow)
    for result in (unknown, no_data, no_model):
        assert result.returncode == 2
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
        assert len(result.stderr) > 40, "the message must be long enough to have wrapped"
    shown = aah(
        "bench",
        "data",
        "--data",
        str(shared_data),
        "--show",
        "underspecified-12",
        "--json",
        env={**narrow, "AAH_REGISTRY": str(tmp_path / "absent.db")},
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stderr.count("\n") == 1 and "endpoint names not checked" in shown.stderr


# Messages that rich would fold, read as markup, or that span lines.
ONE_LINE_MESSAGES = [
    ("x" * 150, "x" * 150),
    ("no tool registry at /a/very/long/path/" + "d" * 60 + "/registry.db", "d" * 60),
    ("a [bold]tag[/bold] and [link=x]", "a [bold]tag[/bold] and [link=x]"),
    ("first line\nsecond line", "first line second line"),
    ("ünïcödé — ✓ 日本語 " * 5, "日本語 ünïcödé"),
]


@pytest.mark.parametrize(("message", "expected"), ONE_LINE_MESSAGES)
@pytest.mark.parametrize("label", ["error", "warning", None])
def test_messages_print_as_one_unfolded_line(
    message: str, expected: str, label: str | None
) -> None:
    from rich.console import Console

    from aah.cli.output import print_error, print_line, print_warning

    out = io.StringIO()
    narrow = Console(file=out, width=40, color_system=None)
    if label == "error":
        print_error(message, to=narrow)
    elif label == "warning":
        print_warning(message, to=narrow)
    else:
        print_line(message, to=narrow)
    text = out.getvalue()
    assert text.count("\n") == 1 and text.startswith(f"{label}: " if label else message[:5])
    assert expected in text


# Tables that rich would cut to "5…" in a narrow terminal: with --wide every
# cell must come out whole (a line may be wider than the terminal, which wraps it).
WHOLE_TABLES = [
    (["setting", "tasks", "exact", "unmatched", "with facts"], [["notools", 575, 572, 0, "-"]]),
    (["name", "description"], [["openmeteo__get_weather_forecast", "Weather forecast " * 12]]),
    (["score", "name"], [[0.98765, "x" * 70], [12, "[not] markup"]]),
]


@pytest.mark.parametrize(("columns", "rows"), WHOLE_TABLES)
@pytest.mark.parametrize("width", [20, 40, 80])
@pytest.mark.parametrize("compact", [True, False])
def test_tables_never_cut_a_word(
    columns: list[str], rows: list[list[object]], width: int, compact: bool
) -> None:
    from rich.console import Console

    from aah.cli.output import print_table, table

    out = io.StringIO()
    print_table(
        table("t", columns, rows, compact=compact),
        to=Console(file=out, width=width, color_system=None),
        wide=True,
    )
    text = out.getvalue()
    assert "…" not in text
    for cell in [*columns, *(str(cell) for row in rows for cell in row)]:
        for word in cell.split():
            assert word in text, (word, text)


# Without --wide a table fits the terminal: every line within the width, and
# a word that does not fit is cut with "…", never mid-word unmarked. The
# corpus: long words, wide characters, markup-like text, many columns, and
# widths down to where only the headers fit.
FITTED_TABLES = [
    *WHOLE_TABLES,
    (["name", "description"], [["天気予報" * 10, "ＡＢＣ wide letters " * 6]]),
    (list("abcdefghij"), [[f"cell{i}-" * 4 for i in range(10)]]),
    (["id", "query"], [["c0ffee", "line one\nline two " + "z" * 90]]),
]


@pytest.mark.parametrize(("columns", "rows"), FITTED_TABLES)
@pytest.mark.parametrize("width", [20, 40, 60, 80, 120])
@pytest.mark.parametrize(("compact", "wrap"), [(True, False), (False, False), (False, True)])
def test_tables_fit_the_terminal_and_mark_every_cut(
    columns: list[str], rows: list[list[object]], width: int, compact: bool, wrap: bool
) -> None:
    from rich.cells import cell_len
    from rich.console import Console

    from aah.cli.output import print_table, table

    out = io.StringIO()
    print_table(
        table("t", columns, rows, compact=compact, wrap=wrap),
        to=Console(file=out, width=width, color_system=None),
    )
    cells = ["t", *columns, *(str(c) for r in rows for c in r)]
    whole = {w for cell in cells for w in cell.split()}
    for line in out.getvalue().splitlines():
        assert cell_len(line) <= width, line
        # rich pads a cut double-width character with a space: "天気予 …".
        words = re.split(r"[\s│┃]+", line.replace(" …", "…"))
        for word in words:
            if word and not set(word) <= set("━─┏┓┗┛┳┻╇┩┡┠┨┯┷└┘┌┐┬┴├┤┼╋"):
                assert word in whole or word.endswith("…"), (word, line)


def test_settings_follow_the_environment_though_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    from aah.config import get_settings

    monkeypatch.setenv("AAH_MODEL", "first")
    assert get_settings() is get_settings()
    assert get_settings().model == "first"
    monkeypatch.setenv("AAH_MODEL", "second")
    assert get_settings().model == "second"
    monkeypatch.delenv("AAH_MODEL")
    assert get_settings().model != "second"


def test_aah_run_names_a_long_wait_for_the_model(tmp_path: Path) -> None:
    """A slow awareness answer is not silence: the trace says what it waits for."""
    script = {
        "rules": [
            {"when": {"has_tools": False}, "reply": {"text": "Yes: all there.", "delay_ms": 3500}},
            {"reply": "It is sunny."},
        ]
    }
    with FakeLLMServer(script) as llm:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
        env |= {"AAH_BASE_URL": llm.base_url, "AAH_MODEL": "m", "AAH_API_KEY": "sk-x"}
        env |= {"NO_COLOR": "1", "COLUMNS": "100"}
        child = subprocess.run(
            [sys.executable, "-m", "aah", "run", "Weather?", "--db", str(tmp_path / "s.db")]
            + ["--awareness", "tool", "--no-aah"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    assert child.returncode == 0, child.stderr
    lines = child.stdout.splitlines()
    waited = [
        n for n, line in enumerate(lines) if "waiting for the model's awareness answer" in line
    ]
    answered = [n for n, line in enumerate(lines) if line.startswith("awareness")]
    assert waited and answered and waited[0] < answered[0], child.stdout


# Typed by a person: each is refused in one line that says what to do, never a
# traceback, and nothing of it reaches the terminal raw. "\udcff" and
# "\udce9" go out as the bytes 0xff and 0xe9, which are not UTF-8.
REFUSED_TOOL_COMMANDS = [
    (["tools", "search", ""], "give a query"),
    (["tools", "search", "   "], "give a query"),
    (["tools", "search", "weather", "-k", "0"], "'-k'"),
    (["tools", "search", "weather", "-k", "-1"], "'-k'"),
    (["tools", "list", "--category", "NoSuchCategory"], "choose one of"),
    (["tools", "list", "--category", "\x1b]0;PWNED\x07"], "choose one of"),
    (["tools", "list", "--category", "\udcff"], "choose one of"),
    (["tools", "show", "caf\udce9"], "no tool named"),
    (["run", ""], "give a query"),
    (["run", " \t "], "give a query"),
    (["run", "weather?", "--auto-tools", "-3"], "'--auto-tools'"),
]


@pytest.mark.parametrize(("args", "said"), REFUSED_TOOL_COMMANDS)
def test_a_bad_tool_command_is_one_line_and_escaped(
    registry: Path, args: list[str], said: str
) -> None:
    result = aah(*args, env={"AAH_REGISTRY": str(registry)})
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("error:") and result.stderr.count("\n") == 1
    assert said in result.stderr
    assert "\x1b" not in result.stderr + result.stdout and "Traceback" not in result.stderr


@pytest.mark.parametrize("query", ["caf\udce9", "weather \udcff", "\udcff\udcfe"])
def test_a_query_that_is_not_utf8_is_searched(registry: Path, query: str) -> None:
    result = aah("tools", "search", query, "-k", "3", "--json", env={"AAH_REGISTRY": str(registry)})
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)) <= 3


def test_a_search_for_more_hits_than_endpoints_lists_every_endpoint(registry: Path) -> None:
    env = {"AAH_REGISTRY": str(registry)}
    result = aah("tools", "search", "weather", "-k", "9" * 30, "--json", env=env)
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert 0 < len(hits) == len({h["name"] for h in hits}) <= len(Registry(registry))


def test_a_question_with_standard_input_closed_is_one_line(registry: Path, tmp_path: Path) -> None:
    script = ask_then_call_script(WEATHER, {"latitude": 48.85, "longitude": 2.35})
    with FakeLLMServer(script) as llm:
        env = model_env(registry, llm, "sk-fake-0000")
        result = aah(
            "run", "What is the weather?", "--tool", WEATHER, "--human", "console",
            "--http", "mock", "--db", str(tmp_path / "aah.db"), env=env, stdin="",
        )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "standard input is closed" in last
    assert "report it as a bug" not in result.stderr and "Traceback" not in result.stderr
