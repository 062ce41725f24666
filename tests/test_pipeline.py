"""The whole offline pipeline, as the README shows it: run, grade, report."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aah.testing.fake_llm import FakeLLMServer
from aah.testing.fake_llm_script import load_script
from aah.tools.registry.build import build_registry

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "scripted_agent.yaml"


@pytest.fixture(scope="module")
def registry(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("registry") / "registry.db"
    build_registry(shared_data, path)
    return path


def test_bench_run_then_grade_then_html_and_json_reports(
    shared_data: Path, registry: Path, tmp_path: Path
) -> None:
    db = tmp_path / "aah.db"
    with FakeLLMServer(load_script(SCRIPT)) as llm:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AAH_", "OPENAI_"))}
        env.update(
            {
                "AAH_BASE_URL": llm.base_url,
                "AAH_MODEL": "fake-model",
                "AAH_API_KEY": "fake",
                "AAH_REGISTRY": str(registry),
                "AAH_DATA_DIR": str(shared_data),
                "AAH_DB": str(db),
                "COLUMNS": "160",
            }
        )

        def aah(*args: str) -> subprocess.CompletedProcess[str]:
            result = subprocess.run(
                [sys.executable, "-m", "aah", *args],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert result.returncode == 0, result.stderr
            return result

        aah("bench", "run", "--run", "smoke", "--setting", "all", "--limit", "2")
        graded = aah("grade", "--run", "smoke")
        assert "10 of 10 graded" in graded.stdout
        aah("report", "--run", "smoke", "--format", "html", "--out", str(tmp_path / "r.html"))
        report = json.loads(aah("report", "--run", "smoke", "--format", "json").stdout)
    html = (tmp_path / "r.html").read_text()
    assert html.count('<img src="data:image/png;base64,') == 3
    cells = {cell["setting"]: cell for cell in report["cells"] if cell["run"] == "smoke"}
    assert set(cells) == {"perfect", "underspecified", "replaceable", "nonreplaceable", "notools"}
    # The script's grader votes 4 Pass to 1 Fail: every answered task passes.
    assert cells["perfect"]["pass_rate"]["k"] == 2 and cells["perfect"]["pass_rate"]["n"] == 2
    assert cells["underspecified"]["awareness"]["k"] == 2  # IDK is aware there
    assert cells["perfect"]["interaction"]["value"] == 1.0
