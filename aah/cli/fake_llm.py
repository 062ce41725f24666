"""``aah fake-llm``: serve a scripted OpenAI-compatible model in the foreground."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated

import typer

from aah.cli.options import HostOption
from aah.errors import AahError


def fake_llm(
    script: Annotated[
        Path,
        typer.Option("--script", help="Reply list or rule table (.json, .yaml or .yml)."),
    ],
    port: Annotated[int, typer.Option("--port", help="TCP port; 0 picks a free one.")] = 8765,
    host: HostOption = "127.0.0.1",
    latency_ms: Annotated[
        int, typer.Option("--latency-ms", min=0, help="Delay added to every answer.")
    ] = 0,
) -> None:
    """Serve a fake OpenAI-compatible chat model that plays a script, until Ctrl-C.

    Point any OpenAI client at the printed URL to run aah offline.
    """
    from aah.testing import FakeLLMServer, load_script

    server = FakeLLMServer(load_script(script), host=host, port=port, latency_ms=latency_ms)
    try:
        server.start()
    except OSError as exc:
        raise AahError(
            f"cannot listen on {host}:{port} ({exc.strerror}); pass another --port, or 0"
        ) from exc
    # Ctrl-C may come as soon as the URL is printed (a script that starts the
    # server waits for that line), so the banner is inside the try.
    try:
        model = server.model_names[0]  # the script's first model, else fake-model
        typer.echo(f"fake LLM serving {script} at {server.base_url}")
        typer.echo(f"export AAH_BASE_URL={server.base_url} AAH_MODEL={model} AAH_API_KEY=fake")
        typer.echo("press Ctrl-C to stop")
        # Waiting on an event keeps the main thread free to receive Ctrl-C.
        threading.Event().wait()
    except KeyboardInterrupt:
        typer.echo("stopped")
    finally:
        server.stop()
