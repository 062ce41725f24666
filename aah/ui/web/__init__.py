"""The Gradio web app for annotators: the question queue, grading, results, launching runs.

The app makes no call to the internet: analytics and the Hugging Face hub are
switched off here, before any module of this package imports Gradio (Gradio
and huggingface_hub read these when imported); fonts are served locally.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
os.environ["HF_HUB_OFFLINE"] = "1"

if TYPE_CHECKING:
    from aah.ui.web.app import DEFAULT_HOST, DEFAULT_PORT, build_app, launch_app
    from aah.ui.web.auth import WebAuth
    from aah.ui.web.decision_link import DecisionLinks, link_key
    from aah.ui.web.notify import NotifySettings, QueueNotifier, parse_urls, start_notifier

__all__ = [
    "WebAuth",
    "DecisionLinks",
    "link_key",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "NotifySettings",
    "QueueNotifier",
    "build_app",
    "launch_app",
    "parse_urls",
    "start_notifier",
]

# Notifications need no Gradio: ``aah web`` starts them before the page.
_NOTIFY = {"NotifySettings", "QueueNotifier", "parse_urls", "start_notifier"}
# Sign-in and decision links need no Gradio either.
_OWN = {
    "WebAuth": "aah.ui.web.auth",
    "DecisionLinks": "aah.ui.web.decision_link",
    "link_key": "aah.ui.web.decision_link",
}
_WHERE = {
    name: _OWN.get(name, "aah.ui.web.notify" if name in _NOTIFY else "aah.ui.web.app")
    for name in __all__
}

__getattr__ = lazy_getattr(__name__, _WHERE)
