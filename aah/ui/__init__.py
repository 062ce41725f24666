"""The faces: a Textual terminal app and a Gradio web app."""

from aah.ui.heap import freeze_start_up

__all__ = ["freeze_start_up"]
