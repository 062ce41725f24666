"""Start a local model server set up for aah: llama.cpp (CPU) or vLLM (GPU)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.serve.gguf import GgufInfo, read_gguf_info
    from aah.serve.llamacpp import (
        DEFAULT_CONTEXT,
        LOCAL_EXTRA_HINT,
        ChatFormatChoice,
        LlamaCppPlan,
        choose_chat_format,
        packaged_model,
        plan_llamacpp,
        require_llama_cpp,
    )
    from aah.serve.process import ServedModel, ServerProcess, free_port, physical_cores
    from aah.serve.vllm import VLLM_FAMILIES, VllmFamily, VllmPlan, plan_vllm, vllm_family

__all__ = [
    "DEFAULT_CONTEXT",
    "LOCAL_EXTRA_HINT",
    "VLLM_FAMILIES",
    "ChatFormatChoice",
    "GgufInfo",
    "LlamaCppPlan",
    "ServedModel",
    "ServerProcess",
    "VllmFamily",
    "VllmPlan",
    "choose_chat_format",
    "free_port",
    "packaged_model",
    "physical_cores",
    "plan_llamacpp",
    "plan_vllm",
    "read_gguf_info",
    "require_llama_cpp",
    "vllm_family",
]

_WHERE = {
    "GgufInfo": "aah.serve.gguf",
    "read_gguf_info": "aah.serve.gguf",
    "DEFAULT_CONTEXT": "aah.serve.llamacpp",
    "LOCAL_EXTRA_HINT": "aah.serve.llamacpp",
    "ChatFormatChoice": "aah.serve.llamacpp",
    "LlamaCppPlan": "aah.serve.llamacpp",
    "choose_chat_format": "aah.serve.llamacpp",
    "packaged_model": "aah.serve.llamacpp",
    "plan_llamacpp": "aah.serve.llamacpp",
    "require_llama_cpp": "aah.serve.llamacpp",
    "ServedModel": "aah.serve.process",
    "ServerProcess": "aah.serve.process",
    "free_port": "aah.serve.process",
    "physical_cores": "aah.serve.process",
    "VLLM_FAMILIES": "aah.serve.vllm",
    "VllmFamily": "aah.serve.vllm",
    "VllmPlan": "aah.serve.vllm",
    "plan_vllm": "aah.serve.vllm",
    "vllm_family": "aah.serve.vllm",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
