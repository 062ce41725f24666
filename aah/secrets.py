"""What counts as a secret, for every place that writes to disk or echoes values.

Names: values under credential-like keys (``api_key``, ``token``,
``authorization``, ``password``...). Text: OpenAI-style keys (``sk-...``)
and bearer tokens inside any string.
"""

from __future__ import annotations

import re

REDACTED = "[redacted]"
# Key names whose values are credentials, after lowercasing and turning
# "-" and " " into "_". "token" must end the name: "max_tokens" is a count.
# Bare "key", "appid" and "auth" are how many public APIs name their key.
_SECRET_KEY = re.compile(
    r"api_?key|secret|passw(or)?d|authorization|credential|private_?key|access_?key"
    r"|cookie|(^|_)token$|^(key|app_?id|app_?key|auth)$"
)
_SECRET_TEXT = re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}|(?<=[Bb]earer )[A-Za-z0-9._~+/\-]{16,}=*")


def is_secret_name(key: str) -> bool:
    """Whether values named ``key`` are credentials (any case, ``-`` or ``_``)."""
    return bool(_SECRET_KEY.search(key.lower().replace("-", "_").replace(" ", "_")))


def scrub_text(text: str | None) -> str | None:
    """``text`` with any key-like substring replaced; None stays None."""
    # Plain substring tests are far cheaper than the regex on long texts.
    if text is None or ("sk-" not in text and "earer " not in text):
        return text
    return _SECRET_TEXT.sub(REDACTED, text)
