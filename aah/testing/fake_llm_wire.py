"""OpenAI's chat-completion wire format: the JSON the fake server sends.

Kept apart from the server so the shapes can be read (and checked against
OpenAI's reference) in one place.
"""

from __future__ import annotations

import json
import math
import re
import time
import uuid
from collections.abc import Iterator, Mapping
from http import HTTPStatus
from typing import Any

from aah.testing.fake_llm_script import Reply, RequestView, ScriptedError, message_text

JsonDict = dict[str, Any]

# Small pieces make clients exercise their delta-accumulation code.
_STREAM_WORDS = re.compile(r"\s*\S+\s*|\s+")
_ARGUMENT_PIECE = 16


def completion(request: JsonDict, replies: list[Reply]) -> JsonDict:
    """A ``chat.completion`` object answering ``request`` with one choice per reply."""
    choices = [_choice(index, reply) for index, reply in enumerate(replies)]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request["model"],
        "system_fingerprint": "fp_fake",
        "choices": choices,
        "usage": _usage(request, choices),
    }


def _choice(index: int, reply: Reply) -> JsonDict:
    calls = [_tool_call(call.name, call.arguments, call.id) for call in reply.tool_calls or []]
    message: JsonDict = {"role": "assistant", "content": reply.text, "refusal": None}
    if calls:
        message["tool_calls"] = calls
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    default_finish = "tool_calls" if calls else "stop"
    return {
        "index": index,
        "message": message,
        "logprobs": None,
        "finish_reason": reply.finish_reason or default_finish,
    }


def _tool_call(name: str, arguments: Mapping[str, Any] | str, call_id: str | None) -> JsonDict:
    return {
        # Unique across server restarts, since checkpointed sessions keep old ids.
        "id": call_id or f"call_{uuid.uuid4().hex[:24]}",
        "type": "function",
        "function": {
            "name": name,
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
        },
    }


def completion_chunks(request: JsonDict, replies: list[Reply]) -> Iterator[JsonDict]:
    """The ``chat.completion.chunk`` objects of a streamed answer, before ``[DONE]``."""
    full = completion(request, replies)
    head = {key: full[key] for key in ("id", "created", "model", "system_fingerprint")}
    head["object"] = "chat.completion.chunk"
    wants_usage = bool((request.get("stream_options") or {}).get("include_usage"))
    for choice in full["choices"]:
        for delta in _deltas(choice["message"]):
            yield _chunk(head, choice["index"], delta, None, wants_usage)
        yield _chunk(head, choice["index"], {}, choice["finish_reason"], wants_usage)
    if wants_usage:
        yield {**head, "choices": [], "usage": full["usage"]}


def _chunk(
    head: JsonDict, index: int, delta: JsonDict, finish: str | None, wants_usage: bool
) -> JsonDict:
    choice = {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}
    chunk = {**head, "choices": [choice]}
    if wants_usage:
        chunk["usage"] = None  # real servers send null usage on every chunk but the last
    return chunk


def _deltas(message: JsonDict) -> Iterator[JsonDict]:
    yield {"role": "assistant", "content": "", "refusal": None}
    for piece in _STREAM_WORDS.findall(message["content"] or ""):
        yield {"content": piece}
    for index, call in enumerate(message.get("tool_calls", [])):
        function = call["function"]
        yield {
            "tool_calls": [
                {
                    "index": index,
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": function["name"], "arguments": ""},
                }
            ]
        }
        arguments = function["arguments"]
        for start in range(0, len(arguments), _ARGUMENT_PIECE):
            piece = arguments[start : start + _ARGUMENT_PIECE]
            yield {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}


def estimate_tokens(text: str) -> int:
    """A token count good enough for usage fields: about four characters a token."""
    return math.ceil(len(text) / 4)


def _usage(request: JsonDict, choices: list[JsonDict]) -> JsonDict:
    # Each message costs a few tokens of framing on top of its text, as on OpenAI.
    view = RequestView(request)
    prompt = sum(estimate_tokens(text) + 3 for text in view.texts)
    completion_tokens = 0
    for choice in choices:
        message = choice["message"]
        completion_tokens += estimate_tokens(message_text(message))
        for call in message.get("tool_calls", []):
            completion_tokens += estimate_tokens(call["function"]["arguments"]) + 3
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
    }


def error_body(error: ScriptedError) -> JsonDict:
    """The OpenAI-style ``{"error": {...}}`` body for ``error``."""
    default_type, default_code = _error_kind(error.status)
    return {
        "error": {
            "message": error.message,
            "type": error.type or default_type,
            "param": None,
            "code": error.code or default_code,
        }
    }


def _error_kind(status: int) -> tuple[str, str | None]:
    if status == HTTPStatus.TOO_MANY_REQUESTS:
        return "requests", "rate_limit_exceeded"
    if status >= HTTPStatus.INTERNAL_SERVER_ERROR:
        return "server_error", None
    return "invalid_request_error", None


def bad_request(message: str) -> ScriptedError:
    """A 400 for a malformed request."""
    return ScriptedError(status=400, message=message, retry_after_ms=None)


def not_found(path: str) -> ScriptedError:
    """A 404 for a path the fake does not serve."""
    return ScriptedError(
        status=404, message=f"Unknown path: {path}", code="unknown_url", retry_after_ms=None
    )


def model_not_found(model: str) -> ScriptedError:
    """The 404 OpenAI gives for an unknown model."""
    return ScriptedError(
        status=404,
        message=f"The model `{model}` does not exist or you do not have access to it.",
        code="model_not_found",
        retry_after_ms=None,
    )


def model_entry(name: str) -> JsonDict:
    """One ``model`` object of ``GET /v1/models``."""
    return {"id": name, "object": "model", "created": 0, "owned_by": "aah-fake-llm"}
