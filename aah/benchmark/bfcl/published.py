"""Multilingual-BFCL's published baseline figures, shown beside a run's where they match.

From "Teaching Small Models When Not to Call Functions: Structured Reasoning
for Tool Refusal in Low-Resource Languages" (SIGIR 2026 short paper), its
baseline columns: the only ones that describe models anyone can run (the
fine-tuned checkpoints are not published). Percent, rounded as published;
temperature 0, at most 2,048 new tokens. ``irrelevance`` is Irr (no call on
irrelevance items), ``h_i`` / ``h_s`` live hallucination read by intent and
by BFCL's standard check.
"""

from __future__ import annotations

from typing import NamedTuple


class PublishedBfcl(NamedTuple):
    """One model and language of MBFCL's baseline table (percent)."""

    model: str
    language: str
    ast: float
    irrelevance: float
    h_i: float
    h_s: float


MBFCL_SOURCE = "Multilingual-BFCL (SIGIR 2026 short paper), baseline columns"
MBFCL_PUBLISHED = (
    PublishedBfcl("Llama-3.2-1B-Instruct", "en", 9, 19, 25, 53),
    PublishedBfcl("Llama-3.2-1B-Instruct", "vi", 9, 9, 26, 49),
    PublishedBfcl("Llama-3.2-1B-Instruct", "th", 8, 6, 22, 43),
    PublishedBfcl("gemma-3-1b-it", "en", 13, 21, 37, 69),
    PublishedBfcl("gemma-3-1b-it", "vi", 8, 21, 45, 74),
    PublishedBfcl("gemma-3-1b-it", "th", 9, 30, 45, 74),
)


def published_for(model: str, language: str) -> PublishedBfcl | None:
    """The published row of ``model`` (its base name, any case) in ``language``, if any.

    A served model is often named by its path or file (``meta-llama/Llama-3.2-1B-Instruct``,
    ``gemma-3-1b-it-Q4_K_M.gguf``): the row matches when its model name is in it.
    """
    wanted = model.lower()
    return next(
        (
            row
            for row in MBFCL_PUBLISHED
            if row.model.lower() in wanted and row.language == language.lower()
        ),
        None,
    )
