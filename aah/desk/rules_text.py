"""Why a call waits for a person, in plain words: the web page and the terminal app say the same.

No face imports here: each face (aah/ui/web, aah/ui/tui) and the console
import it from the desk.
"""

from __future__ import annotations

_OPS = {"present": "is given", "equals": "equals", "in": "is one of"}


def rule_words(rule: str) -> str:
    """Why a call waits for a person, in words, from the policy's rule (``ApprovalRule.describe``).

    ``tool *`` reads "calls of any tool", ``method POST`` "made with POST",
    ``argument amount above 100`` "whose amount is above 100"; a part in
    another shape is shown as written.
    """
    text = " ".join(rule.split())
    if text in ("every call", "all"):
        return "Why it waits for you: the approval policy holds every call for a person."
    parts = []
    for part in text.split(", "):
        what, _, rest = part.partition(" ")
        if what == "tool":
            parts.append("of any tool" if rest in ("*", "") else f"of a tool named {rest}")
        elif what == "method" and rest:
            parts.append(f"made with {rest}")
        elif what == "argument" and rest:
            name, _, condition = rest.partition(" ")
            op, _, value = condition.partition(" ")
            said = _OPS.get(op, f"is {op}")
            parts.append(f"whose {name} {said} {value}".rstrip())
        else:
            parts.append(part)
    return f"Why it waits for you: the approval policy holds calls {', '.join(parts)}."
