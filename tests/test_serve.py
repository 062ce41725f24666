"""`aah serve`: command building, readiness, shutdown, and the GGUF header reader.

vLLM cannot be installed here (it needs torch and a GPU), so a fake `vllm`
executable on PATH records its arguments and serves aah's fake model server
with /health. The llama.cpp side is tested down to the command line; the
real server runs in the interop suite.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from ctrl_c import restore_ctrl_c

from aah.errors import AahError
from aah.serve import (
    VLLM_FAMILIES,
    ServedModel,
    ServerProcess,
    choose_chat_format,
    free_port,
    plan_llamacpp,
    plan_vllm,
    read_gguf_info,
    vllm_family,
)

AAH = [sys.executable, "-m", "aah"]
CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
)
TOOLS_TEMPLATE = (
    "{% if tools %}{{ tools | tojson }}{% endif %}{% for m in messages %}"
    "{% if m['role'] == 'tool' %}<tool_response>{{ m['content'] }}</tool_response>"
    "{% else %}{{ m['content'] }}{% endif %}{% endfor %}"
)
LLAMA2 = "{% for m in messages %}[INST] {{ m['content'] }} [/INST]{% endfor %}"


# --- a hand-written GGUF header -------------------------------------------------


def _gguf_string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def write_gguf(path: Path, metadata: dict[str, Any], *, version: int = 3) -> Path:
    """A GGUF file with ``metadata`` (str, int, list of str, list of int) and no tensors."""
    body = b""
    for key, value in metadata.items():
        body += _gguf_string(key)
        if isinstance(value, str):
            body += struct.pack("<I", 8) + _gguf_string(value)
        elif isinstance(value, bool):
            body += struct.pack("<I?", 7, value)
        elif isinstance(value, int):
            body += struct.pack("<II", 4, value)
        elif value and isinstance(value[0], str):
            body += struct.pack("<IIQ", 9, 8, len(value))
            body += b"".join(_gguf_string(v) for v in value)
        else:
            body += struct.pack("<IIQ", 9, 5, len(value)) + struct.pack(f"<{len(value)}i", *value)
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", version, 0, len(metadata)) + body)
    return path


def smol_like(
    tmp_path: Path, template: str | None = CHATML, name: str = "Tiny-1M-Instruct.Q4_0.gguf"
) -> Path:
    metadata: dict[str, Any] = {
        "general.architecture": "llama",
        "general.name": "Tiny",
        "llama.context_length": 8192,
        "tokenizer.ggml.tokens": ["<s>", "</s>", "hi"],
        "tokenizer.ggml.token_type": [1, 1, 1],
        "tokenizer.ggml.add_bos_token": False,
    }
    if template is not None:
        metadata["tokenizer.chat_template"] = template
    return write_gguf(tmp_path / name, metadata)


def test_gguf_header_is_read_without_the_model(tmp_path: Path) -> None:
    info = read_gguf_info(smol_like(tmp_path))
    assert info.name == "Tiny"
    assert info.architecture == "llama"
    assert info.context_length == 8192
    assert info.chat_template == CHATML


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "not a GGUF model file"),
        (b"PK\x03\x04 a zip file", "not a GGUF model file"),
        (b"GGUF" + struct.pack("<I", 1), "GGUF version 1"),
        (
            b"GGUF" + struct.pack("<IQQ", 3, 0, 2) + _gguf_string("general.name"),
            "not a readable GGUF",
        ),
        (
            b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _gguf_string("k") + struct.pack("<I", 99),
            "not a readable GGUF",
        ),
        (
            b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 50) + b"short",
            "not a readable GGUF",
        ),
    ],
    ids=["empty", "not-gguf", "old-version", "missing-value", "unknown-type", "cut-string"],
)
def test_bad_gguf_files_are_one_line_errors(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    with pytest.raises(AahError, match=message) as caught:
        read_gguf_info(path)
    assert "\n" not in str(caught.value)


# --- llama.cpp: chat format and command ------------------------------------------


@pytest.mark.parametrize(
    ("template", "chosen"),
    [
        (CHATML, "chatml-function-calling"),
        (TOOLS_TEMPLATE, None),
    ],
    ids=["chatml-without-tools", "template-renders-tools"],
)
def test_chat_format_renders_tools(template: str, chosen: str | None) -> None:
    assert choose_chat_format(template, Path("m.gguf")).chat_format == chosen


@pytest.mark.parametrize(
    ("template", "message"),
    [(None, "has no chat template"), (LLAMA2, "ignores tools and is not ChatML")],
    ids=["no-template", "plain-llama2"],
)
def test_a_template_that_would_drop_tools_is_refused(template: str | None, message: str) -> None:
    with pytest.raises(AahError, match=message) as caught:
        choose_chat_format(template, Path("m.gguf"))
    assert "--chat-format" in str(caught.value)


def test_llamacpp_command(tmp_path: Path) -> None:
    plan = plan_llamacpp(smol_like(tmp_path), port=8123, context=4096, threads=3)
    command = plan.command
    assert command[:3] == [sys.executable, "-m", "aah.serve.llamacpp_server"]
    flags = dict(zip(command[3::2], command[4::2], strict=True))
    assert flags["--chat_format"] == "chatml-function-calling"
    assert flags["--n_ctx"] == "4096"
    assert flags["--n_threads"] == "3"
    assert flags["--host"] == "127.0.0.1"
    assert flags["--model_alias"] == "tiny-1m-instruct"
    assert plan.ready_url == "http://127.0.0.1:8123/v1/models"
    assert plan.served.settings() == {
        "AAH_BASE_URL": "http://127.0.0.1:8123/v1",
        "AAH_MODEL": "tiny-1m-instruct",
        "AAH_MAX_CONNECTIONS": "1",
    }


def test_llamacpp_context_beyond_training_is_a_note(tmp_path: Path) -> None:
    plan = plan_llamacpp(smol_like(tmp_path), port=1, context=16384)
    assert plan.notes == [
        "--ctx 16384 is more than the 8192 tokens Tiny-1M-Instruct.Q4_0.gguf was trained for: "
        "replies may degrade past that"
    ]
    assert plan_llamacpp(smol_like(tmp_path), port=1, context=8192).notes == []


def test_llamacpp_chat_format_flag_wins_over_a_missing_template(tmp_path: Path) -> None:
    plan = plan_llamacpp(smol_like(tmp_path, None), port=1, chat_format="functionary-v2")
    assert plan.command[plan.command.index("--chat_format") + 1] == "functionary-v2"


@pytest.mark.parametrize(
    ("model", "context", "message"),
    [
        ("missing.gguf", 4096, "does not exist"),
        ("notemplate.gguf", 4096, "has no chat template"),
        ("ok.gguf", 256, "too small"),
    ],
)
def test_llamacpp_plan_errors(tmp_path: Path, model: str, context: int, message: str) -> None:
    smol_like(tmp_path, None, "notemplate.gguf")
    smol_like(tmp_path, CHATML, "ok.gguf")
    with pytest.raises(AahError, match=message):
        plan_llamacpp(tmp_path / model, port=1, context=context)


def test_serve_llamacpp_without_the_local_extra_names_it() -> None:
    # find_spec answers None for a module set to None in sys.modules: the
    # same answer as for a missing package.
    code = (
        "import sys; sys.modules['llama_cpp'] = None; from aah.cli import main; "
        "sys.argv = ['aah', 'serve', 'llamacpp']; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == "error: the llama.cpp server is not installed: run pip install 'aah[local]'"
    )


# --- vLLM: the family table and the command --------------------------------------


@pytest.mark.parametrize(
    ("model", "family", "parser", "reasoning"),
    [
        ("Qwen/Qwen3-8B", "qwen3", "hermes", "qwen3"),
        ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3-coder", "qwen3_coder", None),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5", "hermes", None),
        ("Qwen/QwQ-32B", "qwq", "hermes", "deepseek_r1"),
        ("NousResearch/Hermes-3-Llama-3.1-8B", "hermes", "hermes", None),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama3", "llama3_json", None),
        ("meta-llama/Llama-3.2-3B-Instruct", "llama3.2", "llama3_json", None),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama4", "llama4_pythonic", None),
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral", "mistral", None),
        ("openai/gpt-oss-20b", "gpt-oss", "openai", None),
        ("ibm-granite/granite-3.3-8b-instruct", "granite", "granite", "granite"),
        ("Salesforce/Llama-xLAM-2-8b-fc-r", "xlam", "xlam", None),
        ("microsoft/Phi-4-mini-instruct", "phi4-mini", "phi4_mini_json", None),
    ],
)
def test_vllm_command_per_family(
    model: str, family: str, parser: str, reasoning: str | None
) -> None:
    plan = plan_vllm(model, port=9000)
    assert plan.family is not None and plan.family.name == family
    command = plan.command
    assert command[:3] == ["vllm", "serve", model]
    assert "--enable-auto-tool-choice" in command
    assert command[command.index("--tool-call-parser") + 1] == parser
    if reasoning is None:
        assert "--reasoning-parser" not in command
    else:
        assert command[command.index("--reasoning-parser") + 1] == reasoning
    assert plan.ready_url == "http://127.0.0.1:9000/health"
    assert plan.served == ServedModel("http://127.0.0.1:9000/v1", model)


def test_vllm_family_names_are_unique_and_findable() -> None:
    names = [f.name for f in VLLM_FAMILIES]
    assert len(names) == len(set(names))
    for family in VLLM_FAMILIES:
        assert vllm_family("whatever", family.name) == family


def test_vllm_parallelism_and_extra_arguments_win() -> None:
    plan = plan_vllm(
        "Qwen/Qwen3-8B",
        port=9000,
        tensor_parallel=2,
        data_parallel=4,
        extra=[
            "--tool-call-parser",
            "qwen3_xml",
            "--served-model-name",
            "q3",
            "--max-model-len",
            "8192",
        ],
    )
    command = plan.command
    assert command[command.index("--tensor-parallel-size") + 1] == "2"
    assert command[command.index("--data-parallel-size") + 1] == "4"
    assert command.count("--tool-call-parser") == 1
    assert command[command.index("--tool-call-parser") + 1] == "qwen3_xml"
    assert command[-2:] == ["--max-model-len", "8192"]
    assert plan.served.model == "q3"


def test_vllm_template_not_shipped_is_a_note() -> None:
    plan = plan_vllm("meta-llama/Llama-3.1-8B-Instruct", port=9000)
    assert "--chat-template" not in plan.command
    assert any("tool_chat_template_llama3.1_json.jinja" in note for note in plan.notes)


@pytest.mark.parametrize(
    ("model", "family", "extra", "message"),
    [
        ("google/gemma-3-4b-it", None, [], "no tool-call parser known for google/gemma-3-4b-it"),
        ("Qwen/Qwen3-8B", "nope", [], "unknown model family 'nope'"),
    ],
)
def test_vllm_unknown_family_is_refused(
    model: str, family: str | None, extra: list[str], message: str
) -> None:
    with pytest.raises(AahError, match=message):
        plan_vllm(model, port=1, family_name=family, extra=extra)


def test_vllm_unknown_family_with_a_parser_given_starts() -> None:
    plan = plan_vllm("google/gemma-3-4b-it", port=1, extra=["--tool-call-parser", "pythonic"])
    assert plan.family is None
    assert "--enable-auto-tool-choice" in plan.command


# --- the fake vllm executable ----------------------------------------------------

FAKE_VLLM = textwrap.dedent(
    """\
    #!{python}
    import json, os, signal, sys, threading, time
    from aah.testing import FakeLLMServer

    record = os.environ["FAKE_VLLM_RECORD"]
    mode = os.environ.get("FAKE_VLLM_MODE", "ok")
    with open(record, "w") as f:
        json.dump(sys.argv[1:], f)
    if mode == "crash":
        print("loading model", flush=True)
        print("torch.OutOfMemoryError: CUDA out of memory", flush=True)
        sys.exit(1)
    if mode == "ignore-sigint":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    args = sys.argv[1:]
    port = int(args[args.index("--port") + 1])
    stopped = threading.Event()
    signal.signal(signal.SIGINT, signal.SIG_IGN if mode == "ignore-sigint" else lambda *a: stopped.set())
    if mode == "never-ready":
        stopped.wait()
        sys.exit(0)
    server = FakeLLMServer({{"replies": ["hello"], "models": [args[1]]}}, port=port).start()
    print("INFO: Application startup complete.", flush=True)
    stopped.wait()
    server.stop()
    with open(record + ".stopped", "w") as f:
        f.write("SIGINT")
    """
)


@pytest.fixture
def fake_vllm(tmp_path: Path) -> dict[str, str]:
    """PATH with a fake `vllm` first; the env the CLI runs with."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "vllm"
    script.write_text(FAKE_VLLM.format(python=sys.executable))
    script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AAH_")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["FAKE_VLLM_RECORD"] = str(tmp_path / "argv.json")
    return env


def _serve_vllm(arguments: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """``aah serve vllm ARGUMENTS`` against the fake vllm, its output piped.

    Ctrl-C, which some tests press, gets its default action back in the child
    (a run started in the background hands its children SIGINT ignored).
    """
    return subprocess.Popen(
        [*AAH, "serve", "vllm", *arguments],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=restore_ctrl_c,
    )


def _wait_for(path: Path, process: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"aah serve exited early ({process.returncode}): {out} {err}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail("aah serve did not write its settings in time")
        time.sleep(0.1)


def test_serve_vllm_starts_waits_prints_and_stops(
    tmp_path: Path, fake_vllm: dict[str, str]
) -> None:
    env_file = tmp_path / "served.env"
    port = free_port()
    process = _serve_vllm(
        ["Qwen/Qwen3-8B", "--port", str(port), "--tp", "2", "--env-file", str(env_file)]
        + ["--", "--max-model-len", "8192"],
        fake_vllm,
    )
    try:
        _wait_for(env_file, process)
        argv = json.loads((tmp_path / "argv.json").read_text())
        assert argv[:2] == ["serve", "Qwen/Qwen3-8B"]
        assert argv[argv.index("--tool-call-parser") + 1] == "hermes"
        assert argv[argv.index("--reasoning-parser") + 1] == "qwen3"
        assert argv[argv.index("--tensor-parallel-size") + 1] == "2"
        assert argv[-2:] == ["--max-model-len", "8192"]
        assert env_file.read_text() == (
            f"AAH_BASE_URL=http://127.0.0.1:{port}/v1\nAAH_MODEL=Qwen/Qwen3-8B\n"
        )
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as answer:
            assert json.load(answer)["data"][0]["id"] == "Qwen/Qwen3-8B"
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert (tmp_path / "argv.json.stopped").read_text() == "SIGINT"
    assert f"export AAH_BASE_URL=http://127.0.0.1:{port}/v1" in out
    assert "vLLM server stopped (status 0)" in out
    assert "Traceback" not in out + err


def test_serve_vllm_sigterm_stops_the_server_too(tmp_path: Path, fake_vllm: dict[str, str]) -> None:
    env_file = tmp_path / "served.env"
    process = _serve_vllm(["openai/gpt-oss-20b", "--env-file", str(env_file)], fake_vllm)
    try:
        _wait_for(env_file, process)
    finally:
        process.terminate()
        process.communicate(timeout=30)
    assert process.returncode == 0
    assert (tmp_path / "argv.json.stopped").exists()


def test_serve_vllm_that_dies_shows_its_last_log_line(
    tmp_path: Path, fake_vllm: dict[str, str]
) -> None:
    done = subprocess.run(
        [*AAH, "serve", "vllm", "Qwen/Qwen3-8B"],
        env={**fake_vllm, "FAKE_VLLM_MODE": "crash"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    error = done.stderr.strip()
    assert error.startswith("error: the vLLM server exited (status 1) before it answered: ")
    assert "CUDA out of memory" in error
    assert "\n" not in error and "Traceback" not in done.stdout + done.stderr


def test_serve_vllm_unknown_family_is_one_line(fake_vllm: dict[str, str]) -> None:
    done = subprocess.run(
        [*AAH, "serve", "vllm", "google/gemma-3-4b-it"],
        env=fake_vllm,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: no tool-call parser known for google/gemma-3-4b-it")
    assert done.stderr.count("\n") == 1


def test_server_that_is_never_ready_times_out_and_is_stopped(
    tmp_path: Path, fake_vllm: dict[str, str]
) -> None:
    plan = plan_vllm("Qwen/Qwen3-8B", port=free_port())
    server = ServerProcess(
        plan.command, name="vLLM server", env={**fake_vllm, "FAKE_VLLM_MODE": "never-ready"}
    )
    with server, pytest.raises(AahError, match=r"did not answer at .*/health within 1 s"):
        server.wait_ready(plan.ready_url, timeout=1)
    assert not server.running()


def test_server_that_ignores_sigint_is_killed_after_the_grace(
    tmp_path: Path, fake_vllm: dict[str, str]
) -> None:
    plan = plan_vllm("Qwen/Qwen3-8B", port=free_port())
    server = ServerProcess(
        plan.command, name="vLLM server", env={**fake_vllm, "FAKE_VLLM_MODE": "ignore-sigint"}
    )
    server.start()
    try:
        server.wait_ready(plan.ready_url, timeout=30)
    finally:
        started = time.monotonic()
        status = server.stop(grace=0.5)
    assert status == -signal.SIGKILL
    assert time.monotonic() - started < 10


def test_missing_vllm_executable_is_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AAH_")}
    env["PATH"] = str(tmp_path)  # no vllm there
    done = subprocess.run(
        [*AAH, "serve", "vllm", "Qwen/Qwen3-8B"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        "error: cannot start the vLLM server (vllm: No such file or directory)"
    )


def test_env_file_that_cannot_be_written(tmp_path: Path) -> None:
    with pytest.raises(AahError, match="pass another --env-file"):
        ServedModel("http://x/v1", "m").write_env_file(tmp_path / "missing" / "x.env")


# --- the llama.cpp server entry point's fixes (no llama_cpp needed) ---------------


def test_tool_results_reach_the_model_as_user_messages() -> None:
    from aah.serve.llamacpp_server import tool_results_as_user_messages

    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "18C and sunny"},
        {"role": "tool", "tool_call_id": "unknown", "content": None},
    ]
    shown = tool_results_as_user_messages(messages)
    assert shown[:2] == messages[:2]
    assert shown[2] == {
        "role": "user",
        "content": "Result of functions.get_weather:\n18C and sunny",
    }
    assert shown[3] == {"role": "user", "content": "Result of functions.the tool:\n"}


class _RecordingLlama:
    """Stands in for llama_cpp.Llama: records the limits the chat handler asks for."""

    verbose = False

    def __init__(self) -> None:
        self.limits: list[int | None] = []

    def create_completion(self, **kwargs: Any) -> dict[str, Any]:
        self.limits.append(kwargs.get("max_tokens"))
        return {"choices": [{"text": "x"}]}


@pytest.mark.parametrize(("asked", "expected"), [(48, [48, 48, 7]), (None, [None, None, 7])])
def test_inner_completions_are_capped_at_the_request_limit(
    asked: int | None, expected: list[int | None]
) -> None:
    from aah.serve.llamacpp_server import capped_handler

    def like_chatml_function_calling(
        *, llama: Any, messages: list[dict[str, Any]], max_tokens: int | None, **kw: Any
    ) -> Any:
        llama.create_completion(prompt="p", max_tokens=None)  # the tool choice
        llama.create_completion(prompt="p", max_tokens=None)  # the arguments
        llama.create_completion(prompt="p", max_tokens=7)
        assert llama.verbose is False  # other attributes pass through
        return messages

    llama = _RecordingLlama()
    capped_handler(like_chatml_function_calling)(llama=llama, messages=[], max_tokens=asked)
    assert llama.limits == expected


@pytest.mark.parametrize("text", ["it's", 'say "hi"', "<b>&amp;</b>", '{"type": "string"}'])
def test_chat_templates_render_text_unescaped(text: str) -> None:
    """llama-cpp-python's tool-calling template autoescapes: the model would read entities."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    from aah.serve.llamacpp_server import plain_text_environment

    escaping = ImmutableSandboxedEnvironment(autoescape=jinja2.select_autoescape(["html", "xml"]))
    assert escaping.from_string("{{ x }}").render(x=text) != text  # the template's own setting
    plain = plain_text_environment(ImmutableSandboxedEnvironment)(
        autoescape=jinja2.select_autoescape(["html", "xml"]), undefined=jinja2.StrictUndefined
    )
    assert plain.from_string("{{ x }}").render(x=text) == text
    with pytest.raises(jinja2.exceptions.SecurityError):  # still the sandbox
        plain.from_string("{{ x.__class__.__mro__ }}").render(x=text)


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ("os.kill(os.getpid(), signal.SIGSEGV)", r"crashed with SIGSEGV; rebuild it"),
        ("os.kill(os.getpid(), signal.SIGTERM)", r"status -15: killed by SIGTERM\) before"),
        ("sys.exit(3)", r"\(status 3\) before"),
    ],
)
def test_a_server_that_dies_says_how_and_a_crash_what_to_do(
    tmp_path: Path, how: str, expected: str
) -> None:
    # A llama.cpp built for the machine's own CPU died of SIGSEGV on CPUs with AMX:
    # the message must say it crashed and what to do, not only "status -11".
    code = f"import os, signal, sys; print('loading', flush=True); {how}"
    server = ServerProcess(
        [sys.executable, "-c", code],
        name="test server",
        log_path=tmp_path / "server.log",
        crash_hint="rebuild it",
    )
    with server, pytest.raises(AahError, match=expected) as raised:
        server.wait_ready(f"http://127.0.0.1:{free_port()}/health", timeout=30)
    assert "\n" not in str(raised.value)
    assert "loading" in str(raised.value)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a parent-death signal is Linux's")
def test_a_killed_aah_serve_takes_its_server_with_it(
    tmp_path: Path, fake_vllm: dict[str, str]
) -> None:
    """SIGKILL leaves aah no time to stop the server (in its own session): the kernel does."""
    env_file = tmp_path / "served.env"
    process = _serve_vllm(
        ["Qwen/Qwen3-8B", "--port", str(free_port()), "--env-file", str(env_file)], fake_vllm
    )
    try:
        _wait_for(env_file, process)
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        assert len(children) == 1
        server = int(children[0])
    finally:
        process.kill()
        process.communicate(timeout=30)
    deadline = time.monotonic() + 20
    while _alive(server) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(server), "the server outlived the aah that started it"


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, already dead, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"
