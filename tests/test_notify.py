"""Notifications of waiting questions: Apprise posting to a webhook receiver on 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from aah.errors import AahError
from aah.store import SessionStore
from aah.ui.web.decision_link import DecisionLinks, link_key
from aah.ui.web.notify import (
    NOTIFY_EXTRA_MISSING,
    NotifySettings,
    QueueNotifier,
    load_apprise,
    parse_urls,
)


class Receiver:
    """A webhook receiver: keeps every JSON body posted to it."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        received = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length", 0))
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"json://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    pytest.importorskip("apprise", reason="notifications need the notify extra")
    found = Receiver()
    yield found
    found.close()


def _waiting(store: SessionStore, question: str = "Which city?") -> str:
    session = store.open_session("Weather?")
    store.set_status(session.id, "waiting")
    return store.humans.create_human_request(session.id, question).id


def test_one_message_per_interval_with_the_count_and_a_link(
    tmp_path: Path, receiver: Receiver
) -> None:
    settings = NotifySettings(
        urls=(receiver.url,),
        queue_url="http://queue.example:7860/",
        after_seconds=60,
        interval_seconds=600,
    )
    with SessionStore(tmp_path / "s.db") as store:
        notifier = QueueNotifier(store, settings)
        now = datetime.now(UTC)
        assert not notifier.check(now)  # nothing waits
        _waiting(store)
        _waiting(store)
        assert not notifier.check(now)  # they have not waited a minute yet
        later = now + timedelta(seconds=61)
        assert notifier.check(later)
        _waiting(store)
        assert not notifier.check(later + timedelta(seconds=300))  # within the interval
        assert notifier.check(later + timedelta(seconds=601))
    assert len(receiver.posts) == 2
    first, second = receiver.posts
    assert first["title"] == "aah: 2 questions wait for an answer"
    assert "2 questions wait for a person; 2 for more than 60 s" in first["message"]
    assert first["message"].endswith("Answer at http://queue.example:7860/")
    assert second["title"] == "aah: 3 questions wait for an answer"


def test_the_message_counts_the_overdue_apart_from_the_rest(tmp_path: Path) -> None:
    settings = NotifySettings(urls=(), queue_url="http://q/", after_seconds=1)
    with SessionStore(tmp_path / "s.db") as store:
        notifier = QueueNotifier(store, settings, sender=object())
        _waiting(store, "First?")
        _waiting(store, "Second?")
        time.sleep(1.05)
        _waiting(store, "Third?")
        found = notifier.message()
    assert found is not None
    title, body = found
    assert title == "aah: 3 questions wait for an answer"
    assert body.startswith("3 questions wait for a person; 2 for more than 1 s (the oldest 0 min).")


def test_questions_of_ended_sessions_are_not_announced(tmp_path: Path, receiver: Receiver) -> None:
    settings = NotifySettings(urls=(receiver.url,), queue_url="http://q/", after_seconds=1)
    with SessionStore(tmp_path / "s.db") as store:
        request_id = _waiting(store)
        session_id = store.humans.get_human_request(request_id).session_id  # type: ignore[union-attr]
        store.end_session(session_id, "error", None)
        assert not QueueNotifier(store, settings).check(datetime.now(UTC) + timedelta(hours=1))
    assert receiver.posts == []


URLS = [
    ("", ()),
    (None, ()),
    ("json://a/", ("json://a/",)),
    (
        "json://a/, ntfy://topic  mailto://x@y.org",
        ("json://a/", "ntfy://topic", "mailto://x@y.org"),
    ),
]


@pytest.mark.parametrize(("text", "urls"), URLS)
def test_aah_notify_holds_urls_separated_by_commas_or_spaces(
    text: str | None, urls: tuple[str, ...]
) -> None:
    assert parse_urls(text) == urls


def test_an_unusable_url_is_a_one_line_error(tmp_path: Path, receiver: Receiver) -> None:
    settings = NotifySettings(urls=("nothing-like-a-url",), queue_url="http://q/")
    with SessionStore(tmp_path / "s.db") as store, pytest.raises(AahError) as caught:
        QueueNotifier(store, settings)
    assert str(caught.value).startswith("AAH_NOTIFY: Apprise cannot use 'nothing-like-a-url'")
    assert "\n" not in str(caught.value)


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "apprise", None)  # what an uninstalled module looks like
    with pytest.raises(AahError) as caught:
        load_apprise()
    assert str(caught.value) == NOTIFY_EXTRA_MISSING


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_aah_web_notifies_once_when_questions_wait(tmp_path: Path, receiver: Receiver) -> None:
    pytest.importorskip("gradio", reason="the web app needs the ui extra")
    db = tmp_path / "s.db"
    with SessionStore(db) as store:
        waiting = _waiting(store)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    env |= {
        "AAH_NOTIFY": receiver.url,
        "AAH_NOTIFY_AFTER": "1",
        "AAH_NOTIFY_INTERVAL": "3600",
        "AAH_WEB_URL": "http://annotate.example/queue",
        "AAH_NOTIFY_LINKS": "1",
    }
    command = [sys.executable, "-m", "aah", "web", "--port", str(port), "--db", str(db)]
    web = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not receiver.posts:
            assert web.poll() is None, web.stderr.read() if web.stderr else b""
            assert time.monotonic() < deadline, "no notification arrived"
            time.sleep(0.1)
        time.sleep(2)  # several more checks: still one message in the interval
    finally:
        web.terminate()
        web.wait(timeout=30)
    assert len(receiver.posts) == 1
    assert receiver.posts[0]["title"] == "aah: 1 question waits for an answer"
    message = receiver.posts[0]["message"]
    assert "Answer at http://annotate.example/queue\n" in message
    # The one waiting question's link that decides it, signed with the app's kept secret.
    from aah.ui.web.auth import WebAuth

    (token,) = re.findall(r"http://annotate\.example/queue/aah/decide/(\S+)", message)
    key = link_key(db.parent, WebAuth())
    assert key is not None
    claims = DecisionLinks(key, SessionStore(db)).check(token).claims
    assert claims is not None and (claims.request_id, claims.to) == (waiting, None)


def test_aah_web_without_the_extra_says_which_to_install(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
    env["AAH_NOTIFY"] = "json://127.0.0.1:9/"
    # Runs aah with apprise hidden, as in an install without the notify extra.
    code = (
        "import sys; sys.modules['apprise'] = None; sys.argv = ['aah', 'web', '--db', sys.argv[1]];"
        " from aah.cli import main; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "s.db")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(NOTIFY_EXTRA_MISSING), result.stderr


# -- a notification service aah does not control ------------------------------------


# (name, behaviour of the webhook): none of them may reach the web app's memory or time.
def _hostile_webhooks() -> list[tuple[str, Any]]:
    from hostile_tool_server import (
        answer,
        chunked,
        gzip_bomb,
        nested_gzip_bomb,
        raw_deflate_bomb,
        silent,
        trickle,
        zlib_bomb,
    )

    return [
        ("gzip bomb", answer(gzip_bomb(), {"Content-Encoding": "gzip"})),
        ("deflate bomb", answer(zlib_bomb(), {"Content-Encoding": "deflate"})),
        ("raw deflate bomb", answer(raw_deflate_bomb(), {"Content-Encoding": "deflate"})),
        (
            "gzip, gzip",
            answer(nested_gzip_bomb(), {"Content-Encoding": "gzip, gzip"}),
        ),
        ("chunked gzip bomb", chunked(gzip_bomb(), {"Content-Encoding": "gzip"})),
        ("never answers", silent),
        ("trickles", trickle(b"HTTP/1.1 200 OK\r\n" + b"x" * 1000, every=0.5)),
    ]


@pytest.mark.parametrize("name", [name for name, _ in _hostile_webhooks()])
def test_a_hostile_webhook_costs_the_web_app_neither_memory_nor_time(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str
) -> None:
    pytest.importorskip("apprise", reason="notifications need the notify extra")
    import resource

    from hostile_tool_server import HostileToolServer

    from aah.ui.web.notify import apprise_sender

    behaviour = dict(_hostile_webhooks())[name]
    with HostileToolServer({"/": behaviour}) as hook, SessionStore(tmp_path / "s.db") as store:
        settings = NotifySettings(
            urls=(f"json://{hook.host}/",), queue_url="http://q/", after_seconds=1
        )
        notifier = QueueNotifier(store, settings, sender=apprise_sender(settings.urls, timeout=8))
        _waiting(store)
        peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.monotonic()
        sent = notifier.check(datetime.now(UTC) + timedelta(hours=1))
        seconds = time.monotonic() - started
        grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before) / 1024
    assert not sent
    assert seconds < 12, seconds
    assert grown_mb < 50, grown_mb
    assert "Traceback" not in caplog.text
