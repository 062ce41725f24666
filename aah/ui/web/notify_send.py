"""Send one Apprise notification in a process of its own, with bounded memory and time.

Run by ``aah web``'s notifier as ``python -m aah.ui.web.notify_send`` with a
JSON object ``{"urls": [...], "title": ..., "body": ...}`` on standard input
(never on the command line, where other users could read the URLs' tokens).
Apprise's plugins read a service's whole reply into memory, decompressing it
without limit: a webhook that answers with a gzip bomb would take the web app
with it. Here the data segment is capped first (``RLIMIT_DATA``), so such a
reply ends this process with a MemoryError, and the parent's timeout ends one
that never finishes. The exit status says whether every URL took the message.
"""

from __future__ import annotations

import json
import resource
import sys

# Python and Apprise need about 40 MB; a reply larger than this is no notification's.
DATA_LIMIT_BYTES = 256 * 1024 * 1024
SENT, NOT_SENT, FAILED = 0, 1, 2


def main() -> int:
    """Read the message from standard input, send it, and say how it went in the exit status."""
    resource.setrlimit(resource.RLIMIT_DATA, (DATA_LIMIT_BYTES, DATA_LIMIT_BYTES))
    try:
        message = json.loads(sys.stdin.read())
        import apprise

        sender = apprise.Apprise()
        for url in message["urls"]:
            sender.add(url)
        sent = sender.notify(title=message["title"], body=message["body"])
    except MemoryError:
        print("the notification service's reply was too large to read", file=sys.stderr)
        return FAILED
    except Exception as exc:  # one line for the parent's log, never a traceback
        print(f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}", file=sys.stderr)
        return FAILED
    return SENT if sent else NOT_SENT


if __name__ == "__main__":
    sys.exit(main())
