"""llama-cpp-python's server, with its tool-calling chat format fixed for agents.

``aah serve llamacpp`` runs this module (``python -m aah.serve.llamacpp_server``
with the server's own arguments) instead of ``python -m llama_cpp.server``.
It re-registers the ``chatml-function-calling`` chat handler (llama-cpp-python
0.3.x) around the original, to close two gaps that break an agent loop:

- the handler generates a tool call's arguments with no token limit (it
  passes ``max_tokens=None`` to its inner completions whatever the request
  said), and a small model fills an array argument until the context is
  full: minutes of CPU on a server that runs one request at a time. Inner
  completions of a request that sets ``max_tokens`` are capped at it;
- its template has no branch for ``tool``-role messages, so tool results
  never reach the model. They are sent as user messages that say which
  call they answer;
- its template is rendered with HTML autoescaping on, so the model reads
  ``&#39;`` for every apostrophe and ``&#34;`` for every quote in the
  messages and the tools' JSON schemas, copies the entities into its
  replies, and sees them escaped again on the next turn (``&amp;#39;``).
  Chat templates are plain text: the module's template environment renders
  without escaping.

Everything else (arguments, routes, shutdown) is the server's own.
"""

from __future__ import annotations

import importlib
from typing import Any

HANDLER = "chatml-function-calling"


class _CappedLlama:
    """A ``Llama`` whose completions without a limit get ``cap`` tokens."""

    def __init__(self, llama: Any, cap: int) -> None:
        self._llama = llama
        self._cap = cap

    def create_completion(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs.get("max_tokens"):
            kwargs["max_tokens"] = self._cap
        return self._llama.create_completion(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llama, name)


def tool_results_as_user_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with each ``tool`` message as a user message naming its call."""
    names = {
        call.get("id"): (call.get("function") or {}).get("name")
        for message in messages
        for call in message.get("tool_calls") or []
        if isinstance(call, dict)
    }
    shown: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") != "tool":
            shown.append(message)
            continue
        name = names.get(message.get("tool_call_id")) or "the tool"
        content = message.get("content")
        text = content if isinstance(content, str) else str(content or "")
        shown.append({"role": "user", "content": f"Result of functions.{name}:\n{text}"})
    return shown


def capped_handler(original: Any) -> Any:
    """``original`` (the chat handler) with capped inner completions and visible tool results."""

    def handler(*, llama: Any, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        cap = kwargs.get("max_tokens")
        # A request without a limit keeps the server's meaning: none.
        return original(
            llama=_CappedLlama(llama, cap) if cap else llama,
            messages=tool_results_as_user_messages(messages),
            **kwargs,
        )

    return handler


def plain_text_environment(environment: type[Any]) -> type[Any]:
    """``environment`` (a Jinja environment class) that never autoescapes."""

    class PlainTextEnvironment(environment):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["autoescape"] = False
            super().__init__(*args, **kwargs)

    return PlainTextEnvironment


def install() -> None:
    """Register the fixed handler under the original's name."""
    formats = importlib.import_module("llama_cpp.llama_chat_format")
    # The handler builds its template from this module-level name at each call.
    environment = plain_text_environment(formats.__dict__["ImmutableSandboxedEnvironment"])
    formats.__dict__["ImmutableSandboxedEnvironment"] = environment
    registry = formats.LlamaChatCompletionHandlerRegistry()
    original = formats.get_chat_completion_handler(HANDLER)
    registry.register_chat_completion_handler(HANDLER, capped_handler(original), overwrite=True)


def main() -> None:
    """Start llama-cpp-python's server (arguments from ``sys.argv``) with the fix."""
    install()
    importlib.import_module("llama_cpp.server.__main__").main()


if __name__ == "__main__":
    main()
