"""A fake-model script playing τ² tasks' gold actions (``bench run --benchmark tau2 --user gold``).

For runs offline (every task against the fake server, the performance
script): the gold user asks for each of the agent's gold actions in turn
(a marker naming the task and the action), the fake model answers the
marker with that call, says "Done." after its result, and gives the
information to communicate when asked last (``aah.benchmark.tau2.scripted``).

Run: ``python -m aah.testing.tau2_script DATA_DIR OUT.json [--domain all] [--split base]``,
then ``aah fake-llm --script OUT.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    """Write the script for a data directory's τ² tasks."""
    from aah.benchmark.tau2 import (
        gold_agent_script,
        load_tau2_domain,
        load_tau2_tasks,
        parse_domains,
    )

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("data", type=Path, help="a data directory holding tau2/")
    parser.add_argument("out", type=Path)
    parser.add_argument("--domain", default="all")
    parser.add_argument("--split", default="base")
    args = parser.parse_args()
    tasks = [
        task
        for name in parse_domains(args.domain)
        for task in load_tau2_tasks(load_tau2_domain(name, args.data), split=args.split)
    ]
    args.out.write_text(json.dumps(gold_agent_script(tasks)), encoding="utf-8")
    print(f"{len(tasks)} tasks: {args.out}")


if __name__ == "__main__":
    main()
