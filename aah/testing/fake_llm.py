"""A fake OpenAI-compatible chat server on loopback that plays a script.

Tests, the offline demo and the performance scripts point the real ``openai``
client (or langchain-openai) at it, so the whole HTTP path runs for real and
only the model's words are scripted. Stdlib only: one ``ThreadingHTTPServer``
in a background thread.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from aah.testing.fake_llm_script import (
    Reply,
    Script,
    ScriptedError,
    ScriptLike,
    ScriptPlayer,
    as_script,
)
from aah.testing.fake_llm_wire import (
    JsonDict,
    bad_request,
    completion,
    completion_chunks,
    error_body,
    model_entry,
    model_not_found,
    not_found,
)

# OpenAI's own limit on ``n``; it also bounds how far one request steps a script.
MAX_CHOICES = 128


class FakeLLMServer:
    """An OpenAI-compatible ``/v1/chat/completions`` server that plays a script.

    Example:
        >>> with FakeLLMServer(["Hello!"]) as server:  # doctest: +SKIP
        ...     client = openai.OpenAI(base_url=server.base_url, api_key="x")

    Args:
        script: A `Script`, a list of replies, a script dict, or a JSON/YAML path.
        host: Interface to bind; keep the loopback default outside of demos.
        port: TCP port; 0 picks a free one (read it back from `base_url`).
        latency_ms: Fixed delay before every chat-completion answer.
    """

    def __init__(
        self,
        script: ScriptLike,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency_ms: int = 0,
    ) -> None:
        """Prepare the server; nothing listens until `start`."""
        self.host = host
        self.port = port
        self.latency_ms = latency_ms
        self._player = ScriptPlayer(as_script(script))
        self._requests: list[JsonDict] = []
        self._lock = threading.Lock()
        self._httpd: _LoopbackHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The URL to give an OpenAI client, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def model_names(self) -> list[str]:
        """The model names the script serves (``fake-model`` when it names none)."""
        return self._player.script.model_names()

    @property
    def requests(self) -> list[JsonDict]:
        """A copy of every chat-completion request body received, in order.

        Requests answered with an error are recorded too, so retries can be counted.
        """
        with self._lock:
            return list(self._requests)

    def set_script(self, script: ScriptLike) -> None:
        """Play ``script`` from its start for the next requests."""
        self._player = ScriptPlayer(as_script(script))

    def start(self) -> FakeLLMServer:
        """Bind the port and serve in a daemon thread; returns ``self``.

        Raises:
            OSError: The port cannot be bound (for instance it is in use).
        """
        if self._httpd is not None:
            return self
        httpd = _LoopbackHTTPServer((self.host, self.port), _ChatHandler, owner=self)
        self.port = int(httpd.server_address[1])
        self._httpd = httpd
        # A short poll keeps stop() fast; the cost is a wake-up every 50 ms.
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, drop open connections and free the port."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLMServer:
        """Start the server for a ``with`` block."""
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop the server when the ``with`` block ends."""
        self.stop()

    def _answer(self, body: JsonDict) -> list[Reply] | ScriptedError:
        """Record a chat request and decide its answer, after any latency."""
        with self._lock:
            self._requests.append(body)
        player = self._player  # one script per request, even if set_script runs meanwhile
        if self.latency_ms:
            time.sleep(self.latency_ms / 1000)
        problem = _request_problem(body, player.script)
        if problem is not None:
            return problem
        answer = player.choices_for(body, int(body.get("n") or 1))
        if isinstance(answer, list):
            delay_ms = max(reply.delay_ms for reply in answer)
            if delay_ms:
                time.sleep(delay_ms / 1000)
        return answer


class _LoopbackHTTPServer(ThreadingHTTPServer):
    """A threading server that knows its owner and can drop idle keep-alive sockets."""

    # Joining handler threads on close would wait for idle keep-alive clients.
    block_on_close = False
    # The default backlog of 5 drops connections when a benchmark opens many at once.
    request_queue_size = 256

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        *,
        owner: FakeLLMServer,
    ) -> None:
        self.owner = owner
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, handler)

    def track(self, connection: socket.socket, *, open_: bool) -> None:
        with self._connections_lock:
            if open_:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Print unexpected handler failures, but not clients hanging up."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # the client already hung up


class _ChatHandler(BaseHTTPRequestHandler):
    """Routes the few OpenAI endpoints the fake serves."""

    # HTTP/1.1 keeps connections alive, as the openai client expects from a real server.
    protocol_version = "HTTP/1.1"
    # Without TCP_NODELAY the header and body writes meet the client's delayed
    # ACK and every answer waits about 40 ms.
    disable_nagle_algorithm = True
    server: _LoopbackHTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, open_=True)

    def finish(self) -> None:
        self.server.track(self.connection, open_=False)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: test output should show test failures, not access logs."""

    def do_GET(self) -> None:
        """Serve ``/v1/models``, ``/v1/models/{id}`` and ``/health``."""
        names = self.server.owner.model_names
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/health":
            # vLLM's readiness check, so the fake can stand in for a starting vLLM.
            self._send_json(200, {})
        elif path == "/v1/models":
            self._send_json(200, {"object": "list", "data": [model_entry(n) for n in names]})
        elif path.startswith("/v1/models/") and path.removeprefix("/v1/models/") in names:
            self._send_json(200, model_entry(path.removeprefix("/v1/models/")))
        elif path.startswith("/v1/models/"):
            self._send_error(model_not_found(path.removeprefix("/v1/models/")))
        else:
            self._send_error(not_found(self.path))

    def do_POST(self) -> None:
        """Serve ``/v1/chat/completions``."""
        body = self._read_json()
        if self.path.split("?", 1)[0].rstrip("/") != "/v1/chat/completions":
            self._send_error(not_found(self.path))
            return
        if body is None:
            self._send_error(bad_request("the request body is not a JSON object"))
            return
        answer = self.server.owner._answer(body)
        if isinstance(answer, ScriptedError):
            self._send_error(answer)
        elif body.get("stream"):
            self._send_stream(body, answer)
        else:
            self._send_json(200, completion(body, answer))

    def _read_json(self) -> JsonDict | None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None
        return body if isinstance(body, dict) else None

    def _send_json(
        self, status: int, payload: JsonDict, headers: Mapping[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, error: ScriptedError) -> None:
        headers: dict[str, str] = {}
        if error.retry_after_ms is not None:
            # The openai client honours this header, so retry tests need not wait seconds.
            headers["retry-after-ms"] = str(error.retry_after_ms)
        self._send_json(error.status, error_body(error), headers)

    def _send_stream(self, body: JsonDict, replies: list[Reply]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for chunk in completion_chunks(body, replies):
            self._write_chunk(f"data: {json.dumps(chunk)}\n\n".encode())
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")


def _request_problem(body: JsonDict, script: Script) -> ScriptedError | None:
    """The error a real server would give for a malformed request, if any."""
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        return bad_request("'messages' must be a non-empty list")
    if not isinstance(body.get("model"), str):
        return bad_request("'model' is required")
    n = body.get("n")
    if n is not None and (not isinstance(n, int) or not 1 <= n <= MAX_CHOICES):
        return bad_request(f"'n' must be an integer from 1 to {MAX_CHOICES}")
    if script.models is not None and body["model"] not in script.models:
        return model_not_found(str(body["model"]))
    return None
