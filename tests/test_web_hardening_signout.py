"""Signing out of the web page signs the kept token out everywhere, for good.

The token a page keeps (``SignInTokens``) is refused once its sign-in is
signed out: from another browser, by a second app on the same database,
after a restart, on SQLite and PostgreSQL alike; and a lifetime shortened
since it was issued applies to it. Over real HTTP (Gradio's own client
against the served app) and on the real store.
"""

from __future__ import annotations

import base64
import json
import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")

from gradio_client import Client  # noqa: E402
from postgres_cluster import raw_rows  # noqa: E402
from test_store import version_6_schema  # noqa: E402
from web_support import serve_app  # noqa: E402

from aah.bounds import OutOfBounds  # noqa: E402
from aah.db_url import DatabaseURL  # noqa: E402
from aah.errors import AahError  # noqa: E402
from aah.store import SessionStore  # noqa: E402
from aah.store import schema as store_schema  # noqa: E402
from aah.ui.web.app import build_app  # noqa: E402
from aah.ui.web.auth import Annotator, WebAuth  # noqa: E402
from aah.ui.web.signin_token import (  # noqa: E402
    MAX_SIGNIN_HOURS,
    SIGNIN_HOURS_ENV,
    TOKEN_LIFETIME_S,
    SignInTokens,
    app_secret,
    lifetime_from_env,
)

ALICE = Annotator("alice", admin=False)
KEY = b"k" * 32


class _Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


# -- over HTTP: the sign-in flow of two apps on one database ------------------

# What the sign-in events give an API client back, by name (states and layout left out).
_SIGN_IN_HEAD = ["signed_in", "timer", "saved"]


def _shown(values: tuple[Any, ...]) -> dict[str, Any]:
    return dict(zip(_SIGN_IN_HEAD, values[:3], strict=True))


def test_a_signed_out_token_is_refused_by_every_app_on_the_database(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    auth = WebAuth(token="team-token")
    with serve_app(db, auth) as first, serve_app(db, auth) as second:
        page = Client(first, verbose=False)
        signed = _shown(page.predict("alice", "team-token", api_name="/sign_in"))
        token = signed["saved"]
        assert signed["signed_in"].startswith("Signed in as **alice**")
        # The token copied to another browser, on the other app: it holds, and is renewed.
        elsewhere = Client(second, verbose=False)
        copied = _shown(elsewhere.predict(token, api_name="/restore_sign_in"))
        assert copied["signed_in"].startswith("Signed in as **alice**")
        renewed = copied["saved"]
        assert renewed  # the same id (the same token, within one second)
        # Sign out on the first page.
        out = _shown(page.predict(api_name="/sign_out"))
        assert out["signed_in"].startswith("Signed out") and out["saved"] == ""
        # Neither the token nor the renewed copy holds, on either app, in any browser.
        for url in (first, second):
            for kept in (token, renewed):
                again = _shown(
                    Client(url, verbose=False).predict(kept, api_name="/restore_sign_in")
                )
                assert again["signed_in"].startswith("Your saved sign-in has expired"), again
                assert again["saved"] == ""
        # A new sign-in is a new token, which holds.
        fresh = _shown(
            Client(first, verbose=False).predict("alice", "team-token", api_name="/sign_in")
        )
        back = _shown(
            Client(second, verbose=False).predict(fresh["saved"], api_name="/restore_sign_in")
        )
        assert back["signed_in"].startswith("Signed in as **alice**")
    # After a restart of the app, the signed-out token is still refused.
    with serve_app(db, auth) as restarted:
        again = _shown(Client(restarted, verbose=False).predict(token, api_name="/restore_sign_in"))
        assert again["signed_in"].startswith("Your saved sign-in has expired")


def test_the_beacon_refuses_a_signed_out_token(tmp_path: Path) -> None:
    import httpx

    db = tmp_path / "s.db"
    with serve_app(db, WebAuth()) as url:
        page = Client(url, verbose=False)
        token = _shown(page.predict("alice", "", api_name="/sign_in"))["saved"]
        release = {"token": token, "request_id": "no-such-request"}
        assert httpx.post(f"{url}aah/release", json=release).status_code == 204
        page.predict(api_name="/sign_out")
        refused = httpx.post(f"{url}aah/release", json=release)
        assert refused.status_code == 403 and "sign in again" in refused.text


# -- on the store, both engines -----------------------------------------------


def test_sign_out_holds_across_apps_and_restarts(store_location: Path) -> None:
    clock = _Clock()
    with SessionStore(store_location) as store:
        tokens = SignInTokens(KEY, clock=clock, signed_out=store)
        token = tokens.issue(ALICE)
        other = tokens.issue(Annotator("bob", admin=True))
        renewed = tokens.renew(token)
        assert renewed is not None and renewed.who == ALICE
        assert tokens.sign_out(renewed.token)
        assert tokens.check(token) is None and tokens.check(renewed.token) is None
        assert tokens.check(other) == Annotator("bob", admin=True)  # another sign-in
        assert not tokens.sign_out("not a token")
    # Another process, another app: a new store on the same database.
    with SessionStore(store_location) as reopened:
        again = SignInTokens(KEY, clock=clock, signed_out=reopened)
        assert again.check(token) is None and again.renew(token) is None
        assert again.check(other) is not None


def test_expired_sign_outs_are_dropped(store_location: Path) -> None:
    clock = _Clock()
    with SessionStore(store_location) as store:
        tokens = SignInTokens(KEY, clock=clock, signed_out=store)
        first = tokens.issue(ALICE)
        tokens.sign_out(first)
        clock.now += MAX_SIGNIN_HOURS * 3600 + 1  # every token of that sign-in has expired
        tokens.sign_out(tokens.issue(ALICE))
    rows = raw_rows(store_location, "SELECT token_id FROM signed_out_tokens")
    assert len(rows) == 1  # the first was dropped, the second kept


def test_a_lifetime_shortened_since_issue_applies(tmp_path: Path) -> None:
    clock = _Clock()
    token = SignInTokens(KEY, lifetime=12 * 3600, clock=clock).issue(ALICE)
    shorter = SignInTokens(KEY, lifetime=3600, clock=clock)
    clock.now += 3599
    assert shorter.check(token) == ALICE
    clock.now += 1
    assert shorter.check(token) is None
    longer = SignInTokens(KEY, lifetime=48 * 3600, clock=clock)
    clock.now += 12 * 3600
    assert longer.check(token) is None  # its own expiry still holds


def _signed(claims: dict[str, Any]) -> str:
    tokens = SignInTokens(KEY)
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    signature = base64.urlsafe_b64encode(tokens._sign(body)).rstrip(b"=").decode()
    return f"{body}.{signature}"


# Signed with the right key, but no sign-out could reach them: refused.
UNREVOCABLE = [
    {"name": "alice", "admin": False, "expires": 1_900_000_000},  # an older aah's token
    {"name": "alice", "admin": False, "id": "", "issued": 1, "expires": 1_900_000_000},
    {"name": "alice", "admin": False, "id": 7, "issued": 1, "expires": 1_900_000_000},
    {"name": "alice", "admin": False, "id": "x" * 65, "issued": 1, "expires": 1_900_000_000},
    {"name": "alice", "admin": False, "id": "a", "expires": 1_900_000_000},
    {"name": "alice", "admin": False, "id": "a", "issued": "1", "expires": 1_900_000_000},
    {"name": "alice", "admin": False, "id": "a", "issued": 1.5, "expires": 1_900_000_000},
]


@pytest.mark.parametrize("claims", UNREVOCABLE, ids=[str(i) for i in range(len(UNREVOCABLE))])
def test_a_token_without_a_usable_id_or_issue_time_is_refused(claims: dict[str, Any]) -> None:
    assert SignInTokens(KEY, clock=lambda: 1_800_000_000.0).check(_signed(claims)) is None


def test_the_app_keeps_sign_outs_in_its_database(tmp_path: Path) -> None:
    """``build_app`` wires the store in: a sign-out from one app object reaches another's tokens."""
    db = tmp_path / "s.db"
    key = app_secret(tmp_path, WebAuth())
    with SessionStore(db) as store:
        token = SignInTokens(key, signed_out=store).issue(ALICE)
        build_app(db, auth=WebAuth())  # the app's store made the table, if it was missing
        SignInTokens(key, signed_out=store).sign_out(token)
    with SessionStore(db) as store:
        assert SignInTokens(key, signed_out=store).check(token) is None


# -- the lifetime setting ------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        ("", TOKEN_LIFETIME_S),
        (" ", TOKEN_LIFETIME_S),
        ("1", 3600.0),
        ("0.5", 1800.0),
        ("720", 720 * 3600.0),
    ],
)
def test_the_lifetime_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, raw: str, seconds: float
) -> None:
    monkeypatch.setenv(SIGNIN_HOURS_ENV, raw)
    assert lifetime_from_env() == seconds


BAD_HOURS = [
    "0",
    "-1",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e999",
    "720.01",
    "1e6",
    "12h",
    "ten",
    "0x10",
    "1_0e400",
]


@pytest.mark.parametrize("raw", BAD_HOURS)
def test_a_bad_lifetime_stops_the_app_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv(SIGNIN_HOURS_ENV, raw)
    with pytest.raises(OutOfBounds) as refused:
        lifetime_from_env()
    message = str(refused.value)
    assert (
        message.startswith(f"set {SIGNIN_HOURS_ENV} to a number of hours") and "\n" not in message
    )
    with pytest.raises(AahError, match=SIGNIN_HOURS_ENV):
        build_app(tmp_path / "s.db", auth=WebAuth())


# -- the schema step -----------------------------------------------------------

_SIGN_OUTS_SQL = re.compile(
    r"-- The web page's kept sign-ins.*?ON signed_out_tokens \(until\);\n", re.S
)


def test_a_version_5_store_is_upgraded(store_location: Path) -> None:
    if isinstance(store_location, DatabaseURL):
        import psycopg

        v5 = _SIGN_OUTS_SQL.sub("", store_schema.postgres_schema_sql())
        v5 = v5.replace(f"VALUES ({store_schema.SCHEMA_VERSION})", "VALUES (5)")
        with psycopg.connect(store_location.url, autocommit=True) as conn:
            conn.execute(v5.encode())
            for table in ("human_requests", "human_answers"):  # schema 7's columns
                for column in ("decision", "edited_arguments", "reason"):
                    conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}".encode())
    else:
        store_location.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(store_location) as conn:
            conn.executescript(_SIGN_OUTS_SQL.sub("", version_6_schema()))
            conn.execute("PRAGMA user_version = 5")
            conn.execute(
                "INSERT INTO sessions (id, query, aah, thread_id, started)"
                " VALUES ('s1', 'q', 1, 's1', '2026-01-01T00:00:00+00:00')"
            )
    assert "signed_out_tokens" not in {row[0] for row in _tables(store_location)}
    with SessionStore(store_location) as store:
        now = datetime.now(UTC)
        store.sign_out_token("t1", now + timedelta(hours=1), now=now)
        assert store.is_signed_out("t1") and not store.is_signed_out("t2")
    assert "signed_out_tokens" in {row[0] for row in _tables(store_location)}
    if isinstance(store_location, DatabaseURL):
        assert raw_rows(store_location, "SELECT version FROM aah_schema") == [
            (store_schema.SCHEMA_VERSION,)
        ]
    else:
        assert raw_rows(store_location, "PRAGMA user_version") == [(store_schema.SCHEMA_VERSION,)]
        assert raw_rows(store_location, "SELECT id FROM sessions") == [("s1",)]


def _tables(location: Path) -> list[tuple[object, ...]]:
    if isinstance(location, DatabaseURL):
        sql = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
    else:
        sql = "SELECT name FROM sqlite_master WHERE type = 'table'"
    return raw_rows(location, sql)
