"""``aah serve``: start a local model server set up for aah, until Ctrl-C."""

from __future__ import annotations

import signal
from pathlib import Path
from types import FrameType

import typer

from aah.cli.options import EnvFileOption
from aah.cli.output import print_line, print_warning
from aah.errors import AahError
from aah.serve import (
    DEFAULT_CONTEXT,
    ServedModel,
    ServerProcess,
    free_port,
    plan_llamacpp,
    plan_vllm,
    require_llama_cpp,
)

app = typer.Typer(no_args_is_help=True)

# llama-cpp-python builds llama.cpp for the building machine's CPU by default;
# that build crashed (SIGSEGV in its AMX matrix code) on CPUs with AMX.
LLAMA_CRASH_HINT = (
    "a crash inside llama.cpp; a build for any CPU avoids the known one (AMX): "
    "`make local`, or CMAKE_ARGS=-DGGML_NATIVE=OFF pip install --no-cache-dir "
    "--force-reinstall --no-deps llama-cpp-python"
)
PortOption = typer.Option(0, "--port", min=0, help="TCP port on 127.0.0.1; 0 picks a free one.")


@app.command("llamacpp")
def llamacpp(
    model: Path | None = typer.Option(
        None, "--model", help="A .gguf file (default: the packaged SmolLM2-135M)."
    ),
    port: int = PortOption,
    ctx: int = typer.Option(DEFAULT_CONTEXT, "--ctx", help="Context length in tokens."),
    chat_format: str | None = typer.Option(
        None, "--chat-format", help="llama-cpp-python chat format (default: chosen from the GGUF)."
    ),
    threads: int | None = typer.Option(
        None, "--threads", min=1, help="CPU threads (default: one per physical core)."
    ),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to wait for the server."),
    env_file: EnvFileOption = None,
) -> None:
    """Serve a GGUF model with llama.cpp (CPU) on 127.0.0.1, set up for tools."""
    require_llama_cpp()
    plan = plan_llamacpp(
        model,
        port=port or free_port(),
        context=ctx,
        chat_format=chat_format,
        threads=threads,
    )
    chosen = plan.chat.chat_format or "the GGUF's own template"
    print_line(
        f"starting llama.cpp: {plan.model_path.name}, chat format {chosen} "
        f"({plan.chat.reason}), context {plan.context}, "
        f"{plan.threads} thread{'' if plan.threads == 1 else 's'}"
    )
    for note in plan.notes:
        print_warning(note)
    server = ServerProcess(plan.command, name="llama.cpp server", crash_hint=LLAMA_CRASH_HINT)
    serve_until_stopped(server, plan.ready_url, plan.served, timeout, env_file)


@app.command(
    "vllm",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def vllm(
    context: typer.Context,
    model: str = typer.Argument(..., help="Model id or path, as vLLM takes it."),
    tp: int = typer.Option(1, "--tp", min=1, help="Tensor-parallel size (GPUs per replica)."),
    dp: int = typer.Option(1, "--dp", min=1, help="Data-parallel size (replicas)."),
    port: int = PortOption,
    family: str | None = typer.Option(
        None, "--family", help="Model family for the parsers (default: from the model id)."
    ),
    timeout: float = typer.Option(
        1800.0, "--timeout", help="Seconds to wait for the server (loading can be slow)."
    ),
    env_file: EnvFileOption = None,
) -> None:
    """Serve MODEL with vLLM, with its family's tool-call and reasoning parsers.

    Arguments after `--` go to `vllm serve` unchanged, and win over aah's.
    """
    plan = plan_vllm(
        model,
        port=port or free_port(),
        tensor_parallel=tp,
        data_parallel=dp,
        family_name=family,
        extra=list(context.args),
    )
    if plan.family is not None:
        print_line(f"model family {plan.family.name}")
    for note in plan.notes:
        print_warning(note)
    print_line("starting: " + " ".join(plan.command))
    server = ServerProcess(plan.command, name="vLLM server")
    serve_until_stopped(server, plan.ready_url, plan.served, timeout, env_file)


def serve_until_stopped(
    server: ServerProcess,
    ready_url: str,
    served: ServedModel,
    timeout: float,
    env_file: Path | None,
) -> None:
    """Start ``server``, print its settings when it answers, and stop it on Ctrl-C.

    A SIGTERM stops it the same way, so a supervisor never leaves the
    server (in its own session) running behind aah.

    Raises:
        AahError: the server did not start, or exited on its own.
    """
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        with server:
            try:
                seconds = server.wait_ready(ready_url, timeout)
                if env_file is not None:
                    served.write_env_file(env_file)
                print_line(f"{server.name} ready at {served.base_url} after {seconds:.1f} s")
                for line in served.env_lines():
                    print_line(line)
                if env_file is not None:
                    print_line(f"settings written to {env_file}")
                print_line(f"log: {server.log_path}; press Ctrl-C to stop")
                status = server.wait()
            except KeyboardInterrupt:
                print_line(f"stopping the {server.name}")
                print_line(f"{server.name} stopped (status {server.stop()})")
                return
        raise AahError(
            f"the {server.name} exited ({server.describe_status(status)}): "
            f"{server.last_log_line()} "
            f"(log: {server.log_path})"
        )
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
