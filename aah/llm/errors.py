"""Why a model request failed, as aah's own exceptions with one-line messages.

Every failure to get a usable reply from a model server is a ``ModelError``
(an ``AahError``), whose message is one line naming the server and what to do
next. The subclasses say which kind of failure it was, so that callers can
treat them differently (the grader falls back to single requests when a
server refuses ``n``) without reading message text.
"""

from __future__ import annotations

import re

from aah.errors import AahError

# How servers say a request does not fit the model's context: OpenAI and vLLM
# ("maximum context length is 8192 tokens", code context_length_exceeded),
# llama.cpp ("exceeds the available context size"), llama-cpp-python
# ("Requested tokens (N) exceed context window of M"), TGI and others
# ("too many tokens", "prompt is too long").
_CONTEXT_OVERFLOW = re.compile(
    r"maximum context length|context[_ ]length[_ ]exceeded|context (?:size|window)"
    r"|too many tokens|prompt is too long|input is too long",
    re.IGNORECASE,
)


class ModelError(AahError):
    """A model request failed; ``str(error)`` is one line for the user.

    Attributes:
        url: The endpoint that failed (without credentials).
        attempts: How many HTTP requests were sent before giving up.
    """

    def __init__(self, message: str, *, url: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.url = url
        self.attempts = attempts


class ModelConnectionError(ModelError):
    """The server could not be reached, or dropped the connection."""


class ModelTimeoutError(ModelError):
    """The server did not send a whole reply within the request's deadline."""


class ModelStatusError(ModelError):
    """The server answered with an HTTP error status.

    Attributes:
        status: The HTTP status code.
        server_message: The server's own explanation (one line, may be empty).
        param: The request parameter the server blamed, when it names one.
    """

    def __init__(
        self,
        message: str,
        *,
        url: str,
        status: int,
        server_message: str,
        param: str | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message, url=url, attempts=attempts)
        self.status = status
        self.server_message = server_message
        self.param = param

    @property
    def context_overflow(self) -> bool:
        """Whether the server refused the request for not fitting the model's context."""
        return 400 <= self.status < 500 and bool(_CONTEXT_OVERFLOW.search(self.server_message))


class ModelReplyError(ModelError):
    """The server answered, but not with a chat completion aah can read."""
