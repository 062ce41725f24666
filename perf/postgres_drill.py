"""The PostgreSQL drill at full size: 2,000 questions, 3 runners, 2 web pages x 10 annotators.

It is tests/test_postgres_drill.py with its numbers raised (the test's
defaults are scaled down for CI): a runner is SIGKILLed and started again,
and the server is restarted, midway; every question must be answered once
and every session end once. Prints the drill's time and questions per second.

Run: .venv/bin/python perf/postgres_drill.py [--questions 2000] [--annotators 10]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--annotators", type=int, default=10, help="Per answering process.")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores")
    env = dict(os.environ)
    env["AAH_DRILL_QUESTIONS"] = str(args.questions)
    env["AAH_DRILL_ANNOTATORS"] = str(args.annotators)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider"]
        + [str(ROOT / "tests" / "test_postgres_drill.py")],
        cwd=ROOT,
        env=env,
        check=False,
    )
    raise SystemExit(done.returncode)


if __name__ == "__main__":
    main()
