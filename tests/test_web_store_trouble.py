"""The store failing under the web page: one line to the person and the log, then on again."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("gradio", reason="the web app needs the ui extra: pip install 'aah[ui]'")

import gradio as gr  # noqa: E402
import psycopg  # noqa: E402
from gradio_client import Client  # noqa: E402
from web_support import seed_request, serve_app  # noqa: E402

from aah.db_url import parse_location  # noqa: E402
from aah.store import StoreFileError  # noqa: E402
from aah.ui.web import store_trouble  # noqa: E402
from aah.ui.web.store_trouble import one_line_store_errors  # noqa: E402


def refuse_connections(url: str, *, refuse: bool) -> None:
    """Make the database at ``url`` refuse new connections and drop its open ones, or allow them."""
    database = url.rsplit("/", 1)[1].split("?")[0]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS {str(not refuse).lower()}')
        if refuse:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                [database],
            )


def test_a_database_server_that_refuses_is_one_line_and_the_page_goes_on(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    db = parse_location(postgres_url)
    seed_request(db, "Which city?")
    seed_request(db, "Which day?")
    with serve_app(db) as url:
        api = Client(url, verbose=False)
        signed = api.predict("ada", "", api_name="/sign_in")
        assert "Which city?" in str(signed)
        refuse_connections(postgres_url, refuse=True)
        try:
            with caplog.at_level(logging.WARNING, logger=store_trouble.__name__):
                for _ in range(3):
                    # Said in the status line above the form, as every problem is: no dialog.
                    refused = api.predict("Lisbon", None, api_name="/send_answer")
                    message = refused[0]
                    assert "session database is not available just now" in message
                    assert "Try again in a moment" in message and "\n" not in message
            lines = [r.getMessage() for r in caplog.records if r.name == store_trouble.__name__]
            assert len(lines) == 1 and "\n" not in lines[0]  # once per 10 s, not per click
        finally:
            refuse_connections(postgres_url, refuse=False)
        # The server is back: the same answer goes through, and the next question opens.
        sent = api.predict("Lisbon", None, api_name="/send_answer")
        assert "Which day?" in str(sent)


@pytest.mark.parametrize("kind", ["plain", "coroutine", "generator", "async generator"])
def test_every_kind_of_handler_keeps_its_kind_and_signature(kind: str) -> None:
    import asyncio
    import inspect

    trouble = StoreFileError(
        "PostgreSQL at 127.0.0.1 is not answering", "start it", parse_location("x.db")
    )

    def plain(text: str, request: gr.Request) -> str:
        raise trouble

    async def coroutine(text: str, request: gr.Request) -> str:
        raise trouble

    def generator(text: str, request: gr.Request):  # type: ignore[no-untyped-def]
        yield "first"
        raise trouble

    async def async_generator(text: str, request: gr.Request):  # type: ignore[no-untyped-def]
        yield "first"
        raise trouble

    fn = {"plain": plain, "coroutine": coroutine, "generator": generator}.get(kind, async_generator)
    with gr.Blocks() as app:
        box = gr.Textbox()
        box.submit(fn, box, box)
    one_line_store_errors(app)
    one_line_store_errors(app)  # twice wraps once
    wrapped = next(iter(app.fns.values())).fn
    assert inspect.signature(wrapped) == inspect.signature(fn)
    assert inspect.iscoroutinefunction(wrapped) == inspect.iscoroutinefunction(fn)
    assert inspect.isgeneratorfunction(wrapped) == inspect.isgeneratorfunction(fn)
    assert inspect.isasyncgenfunction(wrapped) == inspect.isasyncgenfunction(fn)

    async def drive() -> None:
        if kind == "plain":
            wrapped("x", None)
        elif kind == "coroutine":
            await wrapped("x", None)
        elif kind == "generator":
            assert list(wrapped("x", None)) == ["first"]
        else:
            assert [item async for item in wrapped("x", None)] == ["first"]

    with pytest.raises(gr.Error) as refused:
        asyncio.run(drive())
    assert "not answering" in refused.value.message and not refused.value.print_exception


def test_a_handler_with_a_status_line_says_the_trouble_there_and_changes_nothing_else() -> None:
    trouble = StoreFileError("the disk is full", "free some space", parse_location("x.db"))

    def send(text: str) -> tuple[str, str]:
        raise trouble

    with gr.Blocks() as app:
        status = gr.Markdown(elem_id="answer-status")
        box = gr.Textbox()
        box.submit(send, box, [status, box])
    one_line_store_errors(app)
    said, kept = next(iter(app.fns.values())).fn("Lisbon")  # type: ignore[misc]
    assert said.startswith("The session database is not available just now (the disk is full")
    assert "\n" not in said and isinstance(kept, type(gr.skip()))  # the typed answer stays
