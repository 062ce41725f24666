"""An MCP server written as raw JSON-RPC whose one tool asks the client a hostile question.

Run as ``python tests/mcp_elicit_raw_server.py`` (stdio, protocol
2025-11-25, where a server asks mid-call). The tool ``ask`` takes ``case``,
an index into the hostile elicitation corpus, sends that case's params as
an ``elicitation/create`` (written by hand: the SDK's server would refuse
to write most of them), and answers the call with what came back, as JSON:
``{"result": ...}`` or ``{"error": ...}``. A client that stays silent
leaves the call waiting.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile_elicitation import load_cases, params_text  # noqa: E402


def _send(message: str) -> None:
    sys.stdout.write(message + "\n")
    sys.stdout.flush()


def main() -> None:
    """Serve until stdin closes."""
    cases = load_cases()
    waiting: dict[str, Any] = {}  # the elicitation's id -> the call it belongs to
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if "id" not in message:
            continue
        if method is None:  # the client's answer to a question
            call = waiting.pop(str(message["id"]), None)
            said = {k: message[k] for k in ("result", "error") if k in message}
            result = {"content": [{"type": "text", "text": json.dumps(said)}]}
            _send(json.dumps({"jsonrpc": "2.0", "id": call, "result": result}))
        elif method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw-elicit", "version": "1"},
            }
            _send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}))
        elif method == "tools/list":
            tool = {
                "name": "ask",
                "inputSchema": {"type": "object", "properties": {"case": {"type": "integer"}}},
            }
            _send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": [tool]}}))
        elif method == "tools/call":
            index = int(message["params"]["arguments"]["case"])
            asked = f"ask-{index}-{message['id']}"
            waiting[asked] = message["id"]
            params = params_text(cases[index])
            _send(
                f'{{"jsonrpc": "2.0", "id": "{asked}", "method": "elicitation/create", "params": {params}}}'
            )
        else:
            error = {"code": -32601, "message": f"no method {method}"}
            _send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}))


if __name__ == "__main__":
    main()
