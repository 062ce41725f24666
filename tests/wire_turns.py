"""A TCP relay on 127.0.0.1 that counts round trips between a client and a server.

A round trip, as the client feels it, is a turn of the conversation: the
client sends (in one packet or several) and then waits until the server
speaks. The relay counts, over all its connections, how often the server
starts answering after the client has sent something: what a pipelined
PostgreSQL transaction saves shows there, whatever the driver does inside.
"""

from __future__ import annotations

import selectors
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class TurnCounter:
    """Relays 127.0.0.1:``port`` to ``target_port`` and counts the server's turns."""

    def __init__(self, target_port: int) -> None:
        self._target = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._turns = 0
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def turns(self) -> int:
        """The server's turns so far (each follows something the client sent)."""
        with self._guard:
            return self._turns

    def _serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self._listener, selectors.EVENT_READ, None)
        # Per client socket: its server socket, and whether the client spoke last.
        peers: dict[socket.socket, socket.socket] = {}
        spoke: dict[socket.socket, bool] = {}
        while not self._stop.is_set():
            for key, _ in selector.select(timeout=0.05):
                sock = key.fileobj
                if sock is self._listener:
                    client, _ = self._listener.accept()
                    server = socket.create_connection(("127.0.0.1", self._target))
                    peers[client], peers[server] = server, client
                    spoke[client] = False
                    selector.register(client, selectors.EVENT_READ, "client")
                    selector.register(server, selectors.EVENT_READ, "server")
                    continue
                assert isinstance(sock, socket.socket)
                try:
                    data = sock.recv(65536)
                except OSError:
                    data = b""
                other = peers.get(sock)
                if not data or other is None:
                    for end in (sock, other):
                        if end is not None and end in peers:
                            selector.unregister(end)
                            peers.pop(end, None)
                            spoke.pop(end, None)
                            end.close()
                    continue
                client = sock if key.data == "client" else other
                if key.data == "client":
                    spoke[client] = True
                elif spoke.get(client):
                    spoke[client] = False
                    with self._guard:
                        self._turns += 1
                other.sendall(data)
        for sock in list(peers):
            sock.close()
        self._listener.close()

    def close(self) -> None:
        """Stop relaying and close every connection."""
        self._stop.set()
        self._thread.join()


@contextmanager
def counting_turns(target_port: int) -> Iterator[TurnCounter]:
    """A ``TurnCounter`` in front of ``target_port``, closed at the end."""
    counter = TurnCounter(target_port)
    try:
        yield counter
    finally:
        counter.close()
