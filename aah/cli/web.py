"""``aah web``: the Gradio page where annotators answer agents' questions."""

from __future__ import annotations

import importlib
import os
import socket
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import typer

from aah.cli.options import DbOption, GroupMemberOption, HostOption, TeamMemberOption
from aah.cli.output import console, print_line, print_warning
from aah.errors import AahError
from aah.ui import freeze_start_up

if TYPE_CHECKING:
    import gradio as gr

    from aah.store import SessionStore
    from aah.ui.web import DecisionLinks, NotifySettings

UI_EXTRA_MISSING = "the web app needs the ui extra: pip install 'aah[ui]'"
# Kept here rather than imported from the web app, which needs Gradio.
TOKEN_ENV = "AAH_WEB_TOKEN"
ALLOWED_HOSTS_ENV = "AAH_WEB_ALLOWED_HOSTS"
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
EVERY_ADDRESS = ("0.0.0.0", "::", "[::]")


def build_app(db: Path) -> gr.Blocks:
    """The web app on the session database ``db`` (tokens from the environment).

    Raises:
        AahError: Gradio is not installed (the ``ui`` extra).
    """
    app: gr.Blocks = _web_module().build_app(db)
    return app


def _web_module() -> ModuleType:
    """``aah.ui.web``'s app module, imported now: Gradio is an optional extra."""
    try:
        return importlib.import_module("aah.ui.web.app")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in ("gradio", "gradio_client"):
            raise AahError(UI_EXTRA_MISSING) from None
        raise


def web(
    host: HostOption = "127.0.0.1",
    port: int = typer.Option(7860, "--port", min=1, max=65535, help="Port to serve on."),
    db: DbOption = None,
    reviewer: TeamMemberOption = [],  # noqa: B006 - Typer reads the default, never mutates it
    group: GroupMemberOption = [],  # noqa: B006
) -> None:
    """Serve the annotators' web page: the question queue, grading, results, launching runs."""
    from aah.config import get_settings

    if reviewer or group:
        from aah.desk import set_groups, set_reviewers
        from aah.store import SessionStore

        with SessionStore(db or get_settings().db) as store:
            set_reviewers(store, reviewer)
            set_groups(store, group)
    module = _web_module()
    app = module.build_app(db or get_settings().db)
    if host not in LOCAL_HOSTS and not os.environ.get(TOKEN_ENV):
        print_warning(
            f"serving on {host} without {TOKEN_ENV}: anyone who can "
            f"reach it may answer; set {TOKEN_ENV} to require a token"
        )
    if host in EVERY_ADDRESS and not os.environ.get(ALLOWED_HOSTS_ENV):
        print_warning(
            f"serving on {host}: other machines' browsers are refused (421) unless the name "
            f"they open it by is in {ALLOWED_HOSTS_ENV} (e.g. {ALLOWED_HOSTS_ENV}="
            f"{socket.getfqdn().lower()}); or bind --host to the machine's address"
        )
    _start_notifications(db or get_settings().db, host, port)
    print_line(f"aah web on http://{host}:{port} (Ctrl-C stops it)")
    freeze_start_up()
    try:
        module.launch_app(app, host, port, block=True)
    except OSError:
        raise AahError(
            f"cannot serve on {host}:{port} (port taken, or not an address of this machine): "
            "pick another --port or --host"
        ) from None


def _start_notifications(db: Path, host: str, port: int) -> None:
    """Notify AAH_NOTIFY's URLs of questions that wait too long, if it is set.

    Raises:
        AahError: Apprise is missing (the notify extra) or cannot use a URL.
    """
    from aah.config import get_settings
    from aah.store import SessionStore
    from aah.ui.web import NotifySettings, parse_urls, start_notifier

    settings = get_settings()
    urls = parse_urls(settings.notify)
    if not urls:
        return
    shown = socket.getfqdn() if host in ("0.0.0.0", "::") else host
    notify = NotifySettings(
        urls=urls,
        queue_url=settings.web_url or f"http://{shown}:{port}/",
        after_seconds=settings.notify_after,
        interval_seconds=settings.notify_interval,
        links=settings.notify_links,
        link_minutes=settings.notify_link_minutes,
        link_to=settings.notify_link_to,
    )
    store = SessionStore(db)
    links = _decision_links(db, store, notify)
    start_notifier(store, notify, links)
    deciding = (
        f", each message with links that decide {notify.links} item(s)" if links is not None else ""
    )
    console.print(
        f"notifying {len(urls)} address(es) when questions wait over {notify.after_seconds:g} s"
        + deciding,
        highlight=False,
    )


def _decision_links(db: Path, store: SessionStore, notify: NotifySettings) -> DecisionLinks | None:
    """What signs the links that decide one item (``AAH_NOTIFY_LINKS``), or None when off.

    Raises:
        AahError: ``AAH_NOTIFY_LINK_TO`` is no name a person may use.
    """
    from aah.annotators import check_annotator_name
    from aah.ui.web import DecisionLinks, WebAuth, link_key

    if notify.links <= 0:
        return None
    if notify.link_to is not None:
        try:
            check_annotator_name(notify.link_to)
        except ValueError as exc:
            raise AahError(f"AAH_NOTIFY_LINK_TO: {exc}") from None
    key = link_key(db.parent, WebAuth.from_env())
    if key is None:
        print_warning(
            f"AAH_NOTIFY_LINKS: {db.parent} cannot keep the web app's secret: "
            "messages go without links that decide; make the folder writable"
        )
        return None
    return DecisionLinks(key, store)
