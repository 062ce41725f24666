"""The web app for annotators (``aah web``): a Gradio Blocks page over the session store.

Pages: sign-in at the top; then tabs for the question queue, grading final
answers Pass/Fail, a run's results, and (admins only) launching a batch run
whose questions come to the queue. The store is the only link to the
runners, which may be other processes: answering a request is writing it.

The app binds to 127.0.0.1 unless told otherwise; the package's
``__init__`` switches Gradio's network features off before Gradio loads.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
from starlette.middleware import Middleware

from aah.config import get_settings
from aah.errors import AahError
from aah.store import SessionStore
from aah.ui.web.auth import Annotator, WebAuth
from aah.ui.web.desk import QueueDesk, lease_from_env
from aah.ui.web.format import plain
from aah.ui.web.grading_page import build_grading_tab
from aah.ui.web.guard import MAX_REQUEST_BYTES, WebGuard
from aah.ui.web.launch import RunLauncher
from aah.ui.web.launch_page import build_launch_tab
from aah.ui.web.proxies import parse_proxies, uvicorn_trusting
from aah.ui.web.queue import OpenedRequest
from aah.ui.web.queue_page import QueuePage, build_queue_tab
from aah.ui.web.results_page import build_results_tab
from aah.ui.web.signin_token import SignInTokens, app_secret

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "build_app", "launch_app"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7860
REFRESH_SECONDS = 3.0
# Gradio's own cap on an uploaded file; WebGuard refuses uploads before it counts.
MAX_UPLOAD_BYTES = 1
TITLE = "aah: questions from agents"
_WELCOME = (
    "Agents ask people when they lack something. Sign in with your name to answer "
    "their questions; your answers are stored under it."
)
CSS = """
#answer-form { padding: 0.75rem; }
#signed-in p { margin: 0; }
#queue-counter p, #queue-keys p { margin: 0; }
#queue-keys { font-size: 0.9em; color: #555; }
#answer-briefing mark.aah-diff { background: #ffe08a; padding: 0 0.15em; }
#answer-briefing del.aah-diff { color: #888; }
#answer-briefing .aah-rule { font-size: 1.05em; }
"""
# Where the page keeps its signed sign-in (page.js reads the same key).
SAVED_SIGN_IN_KEY = "aah-sign-in"
KEEP_SAVED_JS = (
    f"(saved) => {{ if (saved) {{ localStorage.setItem('{SAVED_SIGN_IN_KEY}', saved); }}"
    f" else {{ localStorage.removeItem('{SAVED_SIGN_IN_KEY}'); }} }}"
)
READ_SAVED_JS = f"() => [localStorage.getItem('{SAVED_SIGN_IN_KEY}') || '']"
PAGE_SCRIPT = (Path(__file__).parent / "page.js").read_text()


@dataclass(frozen=True)
class _SignIn:
    row: gr.Row
    name: gr.Textbox
    token: gr.Textbox
    button: gr.Button
    signed_in: gr.Markdown
    sign_out: gr.Button
    saved: gr.Textbox


def build_app(
    db: Path,
    *,
    auth: WebAuth | None = None,
    data_dir: Path | None = None,
    lease_seconds: float | None = None,
) -> gr.Blocks:
    """The whole web app on the session database ``db``.

    Args:
        db: The session database the runners write to.
        auth: The tokens to check; default ``WebAuth.from_env()``.
        data_dir: The benchmark data, for the results page; default: discovered.
        lease_seconds: How long opening a question holds it for its
            annotator; default ``AAH_WEB_LEASE_SECONDS``, else the store's.

    Raises:
        AahError: ``AAH_WEB_LEASE_SECONDS`` is not a positive number.
    """
    try:
        lease = lease_seconds or lease_from_env()
    except ValueError as exc:
        raise AahError(str(exc)) from None
    store = SessionStore(db)
    checks = auth or WebAuth.from_env()
    desk = QueueDesk(store, lease)
    tokens = SignInTokens(_signing_key(db, checks))
    launcher = RunLauncher(db)
    app = gr.Blocks(title=TITLE, analytics_enabled=False)
    with app:
        user = gr.State(None)
        gr.Markdown(f"## {TITLE}")
        sign_in = _sign_in_row(checks)
        with gr.Column(visible=False, elem_id="main") as main:
            with gr.Tabs():
                with gr.Tab("Queue", id="queue"):
                    queue = build_queue_tab(store, user, desk)
                with gr.Tab("Grade answers", id="grade") as grade_tab:
                    build_grading_tab(store, user, grade_tab)
                with gr.Tab("Results", id="results") as results_tab:
                    build_results_tab(store, user, results_tab, data_dir)
                with gr.Tab("Launch a run", id="launch", visible=False) as launch_tab:
                    build_launch_tab(launcher, user)
        # A short lease (in tests) is refreshed often enough to be renewed while typing.
        timer = gr.Timer(min(REFRESH_SECONDS, desk.lease_seconds / 3), active=False)
        _wire_sign_in(app, checks, tokens, sign_in, user, main, launch_tab, timer, queue)
    return app


def _signing_key(db: Path, checks: WebAuth) -> bytes:
    try:
        return app_secret(db.parent, checks)
    except OSError:
        # A folder the app may not write: sign-ins still survive reloads,
        # though not a restart of the app.
        return secrets.token_bytes(32)


def _sign_in_row(checks: WebAuth) -> _SignIn:
    asks_token = checks.token is not None or checks.admin_token is not None
    with gr.Row(equal_height=True, elem_id="sign-in") as row:
        name = gr.Textbox(label="Your name", placeholder="e.g. alice", elem_id="sign-in-name")
        token = gr.Textbox(
            label="Access token",
            type="password",
            visible=asks_token,
            elem_id="sign-in-token",
        )
        button = gr.Button("Sign in", variant="primary", elem_id="sign-in-button")
    with gr.Row(equal_height=True):
        signed_in = gr.Markdown(_WELCOME, elem_id="signed-in")
        sign_out = gr.Button(
            "Sign out", visible=False, size="sm", scale=0, min_width=100, elem_id="sign-out"
        )
    # The signed sign-in the page keeps in local storage (page.js) and shows back on load.
    saved = gr.Textbox(visible="hidden", elem_id="saved-sign-in")
    return _SignIn(row, name, token, button, signed_in, sign_out, saved)


def _wire_sign_in(
    app: gr.Blocks,
    checks: WebAuth,
    tokens: SignInTokens,
    sign_in: _SignIn,
    user: gr.State,
    main: gr.Column,
    launch_tab: gr.Tab,
    timer: gr.Timer,
    queue: QueuePage,
) -> None:
    signed_outputs = [user, sign_in.signed_in, sign_in.row, sign_in.sign_out, main, launch_tab]
    signed_outputs += [timer, sign_in.saved, *queue.start_outputs()]
    unchanged = tuple(gr.skip() for _ in signed_outputs)

    def signed_in(who: Annotator) -> tuple[Any, ...]:
        role = " (admin: you may launch runs)" if who.admin else ""
        return (
            who,
            f"Signed in as **{plain(who.name)}**{role}.",
            gr.update(visible=False),
            gr.update(visible=True),
            gr.update(visible=True),
            gr.update(visible=who.admin),
            gr.update(active=True),
            tokens.issue(who),
            *queue.handlers.start(who),
        )

    def on_sign_in(name: str, token: str, request: gr.Request | None = None) -> tuple[Any, ...]:
        client = request.client.host if request is not None and request.client else ""
        try:
            who = checks.sign_in(name or "", token or "", client)
        except gr.Error as refused:
            # One line where the welcome was: the fields stay usable for the next try.
            return (gr.skip(), _sentence(str(refused.message)), *unchanged[2:])
        return signed_in(who)

    def on_restore(saved: str) -> tuple[Any, ...]:
        if not saved:
            return unchanged
        who = tokens.check(saved)
        if who is None:
            expired = "Your saved sign-in has expired or no longer holds: sign in again."
            return (gr.skip(), expired, *unchanged[2:7], "", *unchanged[8:])
        return signed_in(who)

    def on_sign_out(who: Annotator | None, current: OpenedRequest | None) -> tuple[Any, ...]:
        if who is not None and current is not None:
            queue.handlers.desk.leave(who.name, current.request_id, release=True)
        return (
            None,
            f"Signed out. {_WELCOME}",
            gr.update(visible=True),
            gr.update(visible=False),
            gr.update(visible=False),
            gr.update(visible=False),
            gr.update(active=False),
            "",
            *queue.handlers.start(None),
        )

    sign_in_inputs = [sign_in.name, sign_in.token]
    sign_in.button.click(
        on_sign_in, sign_in_inputs, signed_outputs, api_name="sign_in", show_progress="hidden"
    ).then(None, [sign_in.saved], None, js=KEEP_SAVED_JS)
    # Enter in either box signs in too; one named endpoint is enough for API clients.
    for submitted in (sign_in.name.submit, sign_in.token.submit):
        submitted(
            on_sign_in,
            sign_in_inputs,
            signed_outputs,
            api_visibility="private",
            show_progress="hidden",
        ).then(None, [sign_in.saved], None, js=KEEP_SAVED_JS)
    sign_in.sign_out.click(
        on_sign_out, [user, queue.opened], signed_outputs, api_name="sign_out"
    ).then(None, [sign_in.saved], None, js=KEEP_SAVED_JS)
    app.load(
        on_restore,
        [sign_in.saved],
        signed_outputs,
        js=READ_SAVED_JS,
        api_name="restore_sign_in",
        show_progress="hidden",
    ).then(None, [sign_in.saved], None, js=KEEP_SAVED_JS)
    timer.tick(
        queue.handlers.tick,
        queue.tick_inputs(user),
        queue.tick_outputs(),
        api_visibility="private",
        show_progress="hidden",
    )


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def launch_app(
    app: gr.Blocks,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    block: bool = True,
    trusted_proxies: Sequence[str] | None = None,
) -> str:
    """Serve ``app`` on ``host:port`` and return its URL; ``block`` waits until stopped.

    Everything that could reach the internet is off: sharing, the SSR node
    server, monitoring, the PWA manifest, the MCP server. ``WebGuard``
    stands in front: no uploads, no file downloads, quiet client errors.

    Args:
        app: The app ``build_app`` made.
        host: The address to bind.
        port: The port to serve on.
        block: Wait until the server stops.
        trusted_proxies: The reverse proxies whose ``X-Forwarded-For`` names
            the client; default ``AAH_WEB_TRUSTED_PROXIES`` (unset: none).

    Raises:
        AahError: ``AAH_WEB_TRUSTED_PROXIES`` lists something that is not an address.
    """
    try:
        proxies = parse_proxies(
            ",".join(trusted_proxies)
            if trusted_proxies is not None
            else get_settings().web_trusted_proxies
        )
    except ValueError as exc:
        raise AahError(str(exc)) from None
    guarded = {"middleware": [Middleware(WebGuard)], "max_body_size": MAX_REQUEST_BYTES}
    with uvicorn_trusting(proxies):
        _, url, _ = app.queue(default_concurrency_limit=8).launch(
            server_name=host,
            server_port=port,
            prevent_thread_lock=not block,
            share=False,
            ssr_mode=False,
            pwa=False,
            mcp_server=False,
            enable_monitoring=False,
            quiet=True,
            show_error=False,
            footer_links=[],
            theme=gr.themes.Default(primary_hue="indigo"),
            css=CSS,
            js=PAGE_SCRIPT,
            max_file_size=MAX_UPLOAD_BYTES,
            app_kwargs=guarded,
        )
    return str(url)
