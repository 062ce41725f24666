"""Render a real aah run's trace in Arize Phoenix's UI to docs/screenshots/phoenix_trace.png.

Starts ``phoenix serve`` on 127.0.0.1 (free ports, a throwaway working
directory), runs ``aah demo --plain`` with OTEL_EXPORTER_OTLP_ENDPOINT pointing
at it (the demo's tasks: a question to a person, a failing tool, a skip, a
success), finds the trace with the most spans through Phoenix's REST API, and
has headless Chromium (Debian's /usr/bin/chromium) draw its page.

Usage::

    python3 -m venv .venv-phoenix && .venv-phoenix/bin/pip install arize-phoenix
    .venv/bin/python scripts/phoenix_screenshot.py [--phoenix .venv-phoenix/bin/phoenix] [--out PNG]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
]


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get(url: str) -> Any:
    """The JSON that ``url`` answers."""
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - loopback only
        return json.loads(response.read())


def main() -> None:
    """Start Phoenix, run the demo into it, and draw the biggest trace."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--phoenix", default=str(ROOT / ".venv-phoenix" / "bin" / "phoenix"))
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots" / "phoenix_trace.png"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        work = Path(name)
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_"))}
        env |= {
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(port),
            "PHOENIX_GRPC_PORT": str(free_port()),
            "PHOENIX_WORKING_DIR": str(work / "phoenix"),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        base = f"http://127.0.0.1:{port}"
        log = (work / "phoenix.log").open("w")
        phoenix = subprocess.Popen([args.phoenix, "serve"], env=env, stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + 180
            while True:
                try:
                    get(f"{base}/v1/projects")
                    break
                except (urllib.error.URLError, OSError):
                    if phoenix.poll() is not None or time.monotonic() > deadline:
                        raise SystemExit("phoenix serve did not start") from None
                    time.sleep(0.3)
            run_env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
            run_env |= {
                "OTEL_EXPORTER_OTLP_ENDPOINT": base,
                "OTEL_SERVICE_NAME": "aah-demo",
                "AAH_DB": str(work / "aah.db"),
                "COLUMNS": "160",
            }
            subprocess.run(
                [sys.executable, "-m", "aah", "demo", "--plain"],
                env=run_env,
                check=True,
                stdout=subprocess.DEVNULL,
            )
            spans: list[dict[str, Any]] = []
            for _ in range(60):
                spans = get(f"{base}/v1/projects/default/spans?limit=1000").get("data", [])
                if spans:
                    break
                time.sleep(0.5)
            time.sleep(1)
            spans = get(f"{base}/v1/projects/default/spans?limit=1000").get("data", [])
            counts = Counter(s["context"]["trace_id"] for s in spans)
            trace, _ = counts.most_common(1)[0]
            project = base64.b64encode(b"Project:1").decode()
            url = f"{base}/projects/{project}/traces/{trace}"
            out = Path(args.out)
            out.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                [
                    args.chromium,
                    *CHROMIUM_FLAGS,
                    f"--user-data-dir={work / 'chromium'}",
                    "--window-size=1600,1000",
                    "--virtual-time-budget=15000",
                    f"--screenshot={out}",
                    url,
                ],
                check=True,
                capture_output=True,
            )
            print(f"wrote {out} ({url}, {counts[trace]} spans)")
        finally:
            phoenix.terminate()
            phoenix.wait(timeout=30)
            log.close()


if __name__ == "__main__":
    main()
