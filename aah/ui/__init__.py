"""The faces: a Textual terminal app and a Gradio web app."""
