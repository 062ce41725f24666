"""The web app for annotators (``aah web``): a Gradio Blocks page over the session store.

Pages: sign-in at the top; then tabs for the question queue, grading final
answers Pass/Fail, a run's results, and (admins only) launching a batch run
whose questions come to the queue. The store is the only link to the
runners, which may be other processes: answering a request is writing it.

The app binds to 127.0.0.1 unless told otherwise; the package's
``__init__`` switches Gradio's network features off before Gradio loads.
"""

from __future__ import annotations

import http.client
import secrets
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
from starlette.middleware import Middleware

from aah.config import get_settings
from aah.desk import UNDO_SECONDS, DeskWorkflow, OpenedRequest, ReviewDesk
from aah.errors import AahError
from aah.store import SessionStore
from aah.ui.web.auth import Annotator, WebAuth
from aah.ui.web.beacon import ClaimBeacon, Release
from aah.ui.web.decision_page import attach_decision_links, decision_middleware
from aah.ui.web.format import plain
from aah.ui.web.grading_page import build_grading_tab
from aah.ui.web.guard import MAX_REQUEST_BYTES, WebGuard
from aah.ui.web.hosts import AllowedHosts, allowed_hosts_from_env, parse_allowed_hosts
from aah.ui.web.launch import RunLauncher
from aah.ui.web.launch_page import build_launch_tab
from aah.ui.web.lease import lease_from_env
from aah.ui.web.proxies import parse_proxies, uvicorn_trusting
from aah.ui.web.queue_page import QueuePage, build_queue_tab
from aah.ui.web.results_page import build_results_tab
from aah.ui.web.review_page import build_review_tab
from aah.ui.web.signin_token import SignInTokens, app_secret, lifetime_from_env
from aah.ui.web.store_trouble import one_line_store_errors
from aah.ui.web.team_page import TEAM_CSS

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "build_app", "launch_app"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7860
# How long a started page may take to answer its first request.
SERVING_TIMEOUT_S = 60.0
REFRESH_SECONDS = 3.0
# Gradio's own cap on an uploaded file; WebGuard refuses uploads before it counts.
MAX_UPLOAD_BYTES = 1
TITLE = "aah: questions from agents"
_WELCOME = (
    "Agents ask people when they lack something. Sign in with your name to answer "
    "their questions; your answers are stored under it."
)
CSS = """
#aah-title h2 { margin: 0; font-size: 1.25em; }
#signed-in p { margin: 0; }
#queue-counter p, #queue-keys p, #answer-status p { margin: 0; }
#queue-keys { font-size: 0.85em; color: #555; }
#approval-call { outline: none; }
/* An MCP server's form opens in the approval part, without the call's title, keys and buttons. */
#approval-part:has(#elicit-form) #approval-title,
#approval-part:has(#elicit-form) #approval-keys,
#approval-part:has(#elicit-form) #approval-buttons { display: none; }
#elicit-fields .aah-field { display: grid; grid-template-columns: 10em 1fr; gap: 0.2em 0.6em; }
#elicit-fields .aah-about { grid-column: 2; color: #666; }
#elicit-buttons button { margin-right: 0.4em; padding: 0.2em 0.8em; }
#approval-fields .aah-field {
  display: grid; grid-template-columns: minmax(7em, 13em) 1fr; gap: 0.1em 0.6em;
  align-items: center; margin: 0.3em 0;
}
#approval-fields .aah-about { grid-column: 2; color: #666; }
#approval-fields input, #approval-fields select, #approval-fields textarea, #approval-reason {
  width: 100%; border: 1px solid #bbb; border-radius: 4px; padding: 0.25em 0.4em; font: inherit;
}
#approval-fields :disabled { background: #f4f4f4; color: #222; }
#approval-call[data-mode=edit] #approval-fields :enabled { background: #fffbe6; }
#approval-note { color: #a40; font-weight: 600; margin: 0.3em 0; }
#approval-keys, #elicit-keys { font-size: 0.85em; color: #555; }
/* A call's or a form's decisions: one button each, big enough for a finger, wrapping. */
.aah-actions { display: flex; flex-wrap: wrap; gap: 0.4em; margin: 0.5em 0 0.2em; }
.aah-actions button { min-height: 2.75em; min-width: 5.5em; padding: 0.3em 0.8em;
  border: 1px solid #999; border-radius: 6px; background: #f7f7f7; color: #222;
  font: inherit; cursor: pointer; }
.aah-actions button.aah-primary { background: var(--button-primary-background-fill, #f97316);
  color: var(--button-primary-text-color, #fff); border-color: transparent; font-weight: 600; }
.aah-actions button:focus-visible { outline: 3px solid #1a5fb4; outline-offset: 1px; }
.aah-field-error { grid-column: 1 / -1; color: #a40; font-weight: 600; margin: 0.1em 0; }
[aria-invalid=true] { border-color: #a40 !important; }
#elicit-url { overflow-wrap: anywhere; user-select: all; }
#elicit-note { color: #a40; font-weight: 600; }
/* One key line at a time: a call's or a form's own, not the question's (its Esc differs). */
.gradio-container:has(#approval-call) #queue-keys,
.gradio-container:has(#elicit-form) #queue-keys { display: none; }
/* The person's own tools (a τ² user's phone): buttons that wrap, small forms, the results. */
#phone-buttons { display: flex; flex-wrap: wrap; gap: 0.3em; margin: 0.3em 0; }
.aah-phone-tool { padding: 0.35em 0.7em; border: 1px solid #999; border-radius: 4px;
  background: #f7f7f7; min-height: 2.4em; font-weight: normal; max-width: 100%;
  overflow-wrap: anywhere; }
.aah-phone-form { border: 1px solid #ccc; border-radius: 4px; margin: 0.4em 0;
  padding: 0.3em 0.6em; }
.aah-phone-form .aah-field { display: grid; grid-template-columns: minmax(6em, 12em) 1fr;
  gap: 0.2em 0.6em; margin: 0.2em 0; }
.aah-phone-form .aah-about { grid-column: 2; color: #666; }
@media (max-width: 600px) {
  .aah-phone-form .aah-field { grid-template-columns: 1fr; }
  .aah-phone-form .aah-about { grid-column: 1; }
}
#phone-results li.aah-error .aah-result { color: #a40; }
#phone-note { color: #a40; font-weight: 600; }
.aah-type, .aah-required { font-size: 0.85em; color: #666; }
.aah-required { color: #a40; }
#answer-status-row { min-height: 0; align-items: center; }
#answer-form { border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 0.5rem; }
#answer-meta p { margin: 0; font-size: 0.85em; }
#answer-request p { margin: 0.15em 0; }
#answer-request .aah-request-diff { max-height: 6.5em; overflow: auto; }
#answer-request mark.aah-diff, #answer-briefing mark.aah-diff {
  background: #ffe08a; padding: 0 0.15em;
}
#answer-request del.aah-diff { color: #888; }
/* A column that wraps would lay what overflows out to its right: scroll instead. */
#answer-context { max-height: 72vh; overflow: auto; flex-wrap: nowrap !important; }
#answer-context > * { flex-shrink: 0; }
#answer-briefing p, #answer-briefing ul { margin: 0.15em 0; }
#aah-confirm { color: #a40000; font-weight: 600; }
table.aah-rows { width: 100%; border-collapse: collapse; font-size: 0.9em; }
table.aah-rows th { text-align: left; white-space: nowrap; }
table.aah-rows th, table.aah-rows td {
  padding: 0.25em 0.5em; border-bottom: 1px solid #ddd; vertical-align: top;
  word-break: normal; overflow-wrap: normal; hyphens: none;
}
#queue-table { max-height: 320px; overflow: auto !important; }
/* A phone: one column, no keyboard talk, every table row a card of labelled lines. */
@media (max-width: 640px) {
  .gradio-container { padding: 0 6px !important; }
  #queue-keys { display: none; }
  #answer-form { padding: 0.25rem; }
  #answer-context { max-height: none; }
  /* No keys on a phone: the buttons say it all. */
  #approval-keys, #elicit-keys { display: none; }
  /* The whole request, its marked words in view: no small box to scroll inside. */
  #answer-request .aah-request-diff { max-height: none; overflow: visible; }
  #approval-fields .aah-field, #elicit-fields .aah-field { grid-template-columns: 1fr; }
  #approval-fields .aah-about, #elicit-fields .aah-about { grid-column: 1; }
  .aah-actions button { flex: 1 1 7em; }
  #answer-buttons button { min-width: 0 !important; }
  table.aah-rows thead { display: none; }
  table.aah-rows tr { display: block; border-bottom: 1px solid #ccc; padding: 0.35em 0; }
  table.aah-rows td { display: block; border: 0; padding: 0.05em 0.25em; overflow-wrap: anywhere; }
  table.aah-rows td::before { content: attr(data-label) ": "; font-weight: 600; }
  #queue-table { max-height: none; }
}
"""
CSS += TEAM_CSS
# Where the page keeps its signed sign-in (page.js reads the same key).
SAVED_SIGN_IN_KEY = "aah-sign-in"
KEEP_SAVED_JS = (
    f"(saved) => {{ if (saved) {{ localStorage.setItem('{SAVED_SIGN_IN_KEY}', saved); }}"
    f" else {{ localStorage.removeItem('{SAVED_SIGN_IN_KEY}'); }} }}"
)
READ_SAVED_JS = f"() => [localStorage.getItem('{SAVED_SIGN_IN_KEY}') || '']"
PAGE_SCRIPT = (Path(__file__).parent / "page.js").read_text()
# Each app's answer to the page's release beacon, for ``launch_app`` to serve.
_RELEASES: weakref.WeakKeyDictionary[gr.Blocks, Release] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class _SignIn:
    row: gr.Row
    name: gr.Textbox
    token: gr.Textbox
    button: gr.Button
    signed_in: gr.Markdown
    sign_out: gr.Button
    saved: gr.Textbox
    # The token the page was last given, kept on the server: what Sign out signs out.
    kept: gr.State


def build_app(
    db: Path,
    *,
    auth: WebAuth | None = None,
    data_dir: Path | None = None,
    lease_seconds: float | None = None,
    undo_seconds: float = UNDO_SECONDS,
    signin_seconds: float | None = None,
) -> gr.Blocks:
    """The whole web app on the session database ``db``.

    Args:
        db: The session database the runners write to.
        auth: The tokens to check; default ``WebAuth.from_env()``.
        data_dir: The benchmark data, for the results page; default: discovered.
        lease_seconds: How long a question stays held for its annotator
            without the page's heartbeat; default ``AAH_WEB_LEASE_SECONDS``,
            else a minute.
        undo_seconds: How long a decline or a skip can be undone.
        signin_seconds: How long a kept sign-in holds; default
            ``AAH_WEB_SIGNIN_HOURS``, else 12 hours.

    Raises:
        AahError: ``AAH_WEB_LEASE_SECONDS`` or ``AAH_WEB_SIGNIN_HOURS`` is out of bounds.
    """
    try:
        lease = lease_seconds or lease_from_env()
    except ValueError as exc:
        raise AahError(str(exc)) from None
    store = SessionStore(db)
    checks = auth or WebAuth.from_env()
    workflow = DeskWorkflow(store, lease, undo_seconds=undo_seconds)
    tokens = SignInTokens(
        _signing_key(db, checks),
        lifetime=signin_seconds or lifetime_from_env(),
        signed_out=store,
    )
    launcher = RunLauncher(db)
    app = gr.Blocks(title=TITLE, analytics_enabled=False)
    with app:
        user = gr.State(None)
        gr.Markdown(f"## {TITLE}", elem_id="aah-title")
        sign_in = _sign_in_row(checks)
        with gr.Column(visible=False, elem_id="main") as main:
            with gr.Tabs(elem_id="tabs") as tabs:
                with gr.Tab("Queue", id="queue", elem_id="tab-queue") as queue_tab:
                    queue = build_queue_tab(store, user, workflow)
                with gr.Tab("Grade answers", id="grade", elem_id="tab-grade") as grade_tab:
                    build_grading_tab(store, user, grade_tab)
                with gr.Tab("Review", id="review", elem_id="tab-review") as review_tab:
                    build_review_tab(store, user, review_tab, ReviewDesk(store))
                with gr.Tab("Results", id="results", elem_id="tab-results") as results_tab:
                    build_results_tab(store, user, results_tab, data_dir)
                with gr.Tab("Launch a run", id="launch", visible=False) as launch_tab:
                    build_launch_tab(launcher, user)
        queue.wire_tabs(user, queue_tab, [grade_tab, review_tab, results_tab, launch_tab])
        # The refresh is the page's heartbeat: several fall within a lease.
        timer = gr.Timer(min(REFRESH_SECONDS, workflow.lease_seconds / 3), active=False)
        wiring = (checks, tokens, sign_in, user, main, tabs, launch_tab, timer, queue)
        _wire_sign_in(app, *wiring)
    one_line_store_errors(app)
    _RELEASES[app] = _releaser(workflow, tokens)
    attach_decision_links(app, db, store, workflow, checks)
    return app


def _releaser(workflow: DeskWorkflow, tokens: SignInTokens) -> Release:
    def release(saved: str, request_id: str) -> bool:
        who = tokens.check(saved)
        if who is None:
            return False
        workflow.leave(who.name, request_id, release=True)
        return True

    return release


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
        name = gr.Textbox(
            label="Your name", placeholder="e.g. alice", autofocus=True, elem_id="sign-in-name"
        )
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
    return _SignIn(row, name, token, button, signed_in, sign_out, saved, gr.State(""))


def _wire_sign_in(
    app: gr.Blocks,
    checks: WebAuth,
    tokens: SignInTokens,
    sign_in: _SignIn,
    user: gr.State,
    main: gr.Column,
    tabs: gr.Tabs,
    launch_tab: gr.Tab,
    timer: gr.Timer,
    queue: QueuePage,
) -> None:
    signed_outputs = [user, sign_in.signed_in, sign_in.row, sign_in.sign_out, main, launch_tab]
    signed_outputs += [timer, sign_in.saved, *queue.start_outputs(), tabs, sign_in.kept]
    unchanged = tuple(gr.skip() for _ in signed_outputs)

    def signed_in(who: Annotator, token: str) -> tuple[Any, ...]:
        role = " (admin: you may launch runs)" if who.admin else ""
        return (
            who,
            f"Signed in as **{plain(who.name)}**{role}.",
            gr.update(visible=False),
            gr.update(visible=True),
            gr.update(visible=True),
            gr.update(visible=who.admin),
            gr.update(active=True),
            token,
            *queue.handlers.start(who),
            # The question just opened is the Queue tab's: show that tab.
            gr.Tabs(selected="queue"),
            token,
        )

    def on_sign_in(name: str, token: str, request: gr.Request | None = None) -> tuple[Any, ...]:
        client = request.client.host if request is not None and request.client else ""
        try:
            who = checks.sign_in(name or "", token or "", client)
        except gr.Error as refused:
            # One line where the welcome was: the fields stay usable for the next try.
            return (gr.skip(), _sentence(str(refused.message)), *unchanged[2:])
        return signed_in(who, tokens.issue(who))

    def on_restore(saved: str) -> tuple[Any, ...]:
        if not saved:
            return unchanged
        renewed = tokens.renew(saved)
        if renewed is None:
            expired = "Your saved sign-in has expired or no longer holds: sign in again."
            return (gr.skip(), expired, *unchanged[2:7], "", *unchanged[8:])
        return signed_in(*renewed)

    def on_sign_out(
        who: Annotator | None, current: OpenedRequest | None, kept: str
    ) -> tuple[Any, ...]:
        if kept:
            # Every copy of the page's token, in any browser, stops holding.
            tokens.sign_out(kept)
        return signed_out(who, current, f"Signed out. {_WELCOME}")

    def on_heartbeat(
        who: Annotator | None, current: OpenedRequest | None, kept: str
    ) -> tuple[Any, ...]:
        # A page signed in from a copy of a token that was signed out elsewhere
        # (another browser, another app on the database) is signed out too.
        if who is None or not kept or not tokens.signed_out(kept):
            return unchanged
        return signed_out(who, current, f"Signed out on another page. {_WELCOME}")

    def signed_out(
        who: Annotator | None, current: OpenedRequest | None, note: str
    ) -> tuple[Any, ...]:
        if who is not None and current is not None:
            queue.handlers.workflow.leave(who.name, current.request_id, release=True)
        return (
            None,
            note,
            gr.update(visible=True),
            gr.update(visible=False),
            gr.update(visible=False),
            gr.update(visible=False),
            gr.update(active=False),
            "",
            *queue.handlers.start(None),
            gr.skip(),
            "",
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
        on_sign_out, [user, queue.opened, sign_in.kept], signed_outputs, api_name="sign_out"
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
        on_heartbeat,
        [user, queue.opened, sign_in.kept],
        signed_outputs,
        api_visibility="private",
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
    allowed_hosts: Sequence[str] | None = None,
) -> str:
    """Serve ``app`` on ``host:port`` and return its URL; ``block`` waits until stopped.

    Everything that could reach the internet is off: sharing, the SSR node
    server, monitoring, the PWA manifest, the MCP server. ``WebGuard``
    stands in front: only this app's host names and pages, no uploads, no
    file downloads, quiet client errors.

    Args:
        app: The app ``build_app`` made.
        host: The address to bind.
        port: The port to serve on.
        block: Wait until the server stops.
        trusted_proxies: The reverse proxies whose ``X-Forwarded-For`` names
            the client; default ``AAH_WEB_TRUSTED_PROXIES`` (unset: none).
        allowed_hosts: Host names the page answers to besides localhost's
            and ``host``; default ``AAH_WEB_ALLOWED_HOSTS`` (unset: none).

    Raises:
        AahError: ``AAH_WEB_TRUSTED_PROXIES`` lists something that is not an address,
            ``AAH_WEB_ALLOWED_HOSTS`` something that is not a host name, or the
            page does not answer within ``SERVING_TIMEOUT_S``.
    """
    try:
        proxies = parse_proxies(
            ",".join(trusted_proxies)
            if trusted_proxies is not None
            else get_settings().web_trusted_proxies
        )
        names = (
            parse_allowed_hosts(",".join(allowed_hosts))
            if allowed_hosts is not None
            else allowed_hosts_from_env()
        )
    except ValueError as exc:
        raise AahError(str(exc)) from None
    middleware = [Middleware(WebGuard, hosts=AllowedHosts(host, names))]
    release = _RELEASES.get(app)
    if release is not None:
        middleware.append(Middleware(ClaimBeacon, release=release))
    middleware += decision_middleware(app)
    guarded = {"middleware": middleware, "max_body_size": MAX_REQUEST_BYTES}
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
            # Gradio's own check that the page answers gives up after one
            # 3 s try, then blames sharing and proxies; ``_wait_until_serving``
            # waits longer and says what happened.
            _frontend=False,
        )
    if not block:  # a blocking launch comes back here only once the server has stopped
        _wait_until_serving(str(url))
    return str(url)


def _wait_until_serving(url: str, timeout: float = SERVING_TIMEOUT_S) -> None:
    """Return once ``url`` answers HTTP at all (a loaded machine may take seconds).

    Raises:
        AahError: It did not answer within ``timeout`` seconds.
    """
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy
    deadline = time.monotonic() + timeout
    problem = "no answer"
    while time.monotonic() < deadline:
        try:
            with direct.open(urllib.request.Request(url, method="HEAD"), timeout=5):
                return
        except urllib.error.HTTPError:
            return  # an HTTP answer of any kind: the server is up
        except (OSError, http.client.HTTPException) as exc:
            problem = " ".join(str(exc).split()) or type(exc).__name__
        time.sleep(0.25)
    raise AahError(
        f"the web page at {url} did not answer within {timeout:.0f} s ({problem}): "
        "see whether the machine is overloaded or the port is firewalled, and start it again"
    )
