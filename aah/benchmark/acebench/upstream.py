"""ACEBench's own reading of a Special reply: upstream's string rules, exactly.

Upstream (``eval_main.py``, ``special_eval``; see the data folder's
SOURCE.md) reads the model's whole reply as one string and each item as
right or wrong. Every test is a case-sensitive substring test, in the order
below; the first that fails decides the error type:

- incomplete, for each ``api: [params]`` of the ground truth: the reply holds
  ``Missing necessary parameters`` (else ``error_detection``), the API's
  name (else ``error_correction``) and each missing parameter's name (else
  ``error_correction``);
- error_param, for each ``param: [values]``: the reply holds ``There is
  incorrect value`` (else ``error_detection``) and each bad value as written
  (else ``error_correction``);
- irrelevant: the reply holds ``the limitations of the function`` (else
  ``error_detection``).

Chinese items are read by the same English phrases (upstream's Chinese
prompt asks for them). A category's accuracy is right / items; the summary
is the unweighted mean of the three categories (``evaluation_helper.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NamedTuple

from aah.benchmark.acebench.tasks import Category

ErrorType = Literal["error_detection", "error_correction"]
ERROR_TYPES: tuple[ErrorType, ...] = ("error_detection", "error_correction")
INCOMPLETE_PHRASE = "Missing necessary parameters"
ERROR_PARAM_PHRASE = "There is incorrect value"
IRRELEVANT_PHRASE = "the limitations of the function"


class Verdict(NamedTuple):
    """Upstream's reading of one reply: right or wrong, and why not.

    Attributes:
        valid: Whether upstream scores the reply right.
        error_type: ``error_detection`` or ``error_correction`` when wrong.
        error: What upstream found missing, in one line.
    """

    valid: bool
    error_type: ErrorType | None = None
    error: str = ""


RIGHT = Verdict(True)


def special_eval(
    reply: str, ground_truth: Mapping[str, tuple[str, ...]] | str, category: Category
) -> Verdict:
    """Upstream's verdict on ``reply`` for an item of ``category`` with ``ground_truth``."""
    if category == "irrelevant":
        if IRRELEVANT_PHRASE not in reply:
            return Verdict(False, "error_detection", f"the reply lacks {IRRELEVANT_PHRASE!r}")
        return RIGHT
    if isinstance(ground_truth, str):
        # Only ``irrelevant`` has a sentence for ground truth (the loader checks it).
        raise TypeError(f"a {category} item needs {{name: [text, ...]}} ground truth")
    for name, values in ground_truth.items():
        if category == "incomplete":
            if INCOMPLETE_PHRASE not in reply:
                return Verdict(False, "error_detection", f"the reply lacks {INCOMPLETE_PHRASE!r}")
            if name not in reply:
                return Verdict(
                    False, "error_correction", f"the reply does not name the API {name!r}"
                )
            for param in values:
                if param not in reply:
                    return Verdict(
                        False,
                        "error_correction",
                        f"the reply lacks the parameter {param!r}",
                    )
        else:
            if ERROR_PARAM_PHRASE not in reply:
                return Verdict(False, "error_detection", f"the reply lacks {ERROR_PARAM_PHRASE!r}")
            for value in values:
                if value not in reply:
                    return Verdict(
                        False, "error_correction", f"the reply does not give the value {value!r}"
                    )
    return RIGHT
