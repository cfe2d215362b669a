"""Choosing the chat template used for training: one with `{% generation %}` markers around what the
assistant generates, so the assistant mask (and so the loss mask) comes from the template itself.

Order: an explicit template file; the tokenizer's own template when it already has the markers;
TRL's training variant of a template TRL knows (Qwen2.5/3, Llama 3, Gemma, DeepSeek, ...); ours for
other ChatML templates with Qwen-style tool calls. Anything else is an error naming what to provide.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

GENERATION_MARKER = "{% generation %}"


def has_generation_markers(template: str) -> bool:
    return "generation %}" in template and "endgeneration" in template


def chatml_training_template() -> str:
    """Our training template for ChatML/Qwen-style chats with tools (prefix-preserving, thinking always kept)."""
    return resources.files("sft").joinpath("templates/chatml_tools_training.jinja").read_text(encoding="utf-8")


def training_template(tokenizer: Any, template_file: Path | None = None) -> str:
    """The training chat template for `tokenizer` (see the module docstring for the order).

    Raises:
        ValueError: no template with generation markers can be found for this tokenizer.
    """
    if template_file is not None:
        text = Path(template_file).read_text(encoding="utf-8")
        if not has_generation_markers(text):
            raise ValueError(f"{template_file}: the chat template has no {{% generation %}} markers")
        return text
    own = tokenizer.chat_template
    if isinstance(own, dict):
        own = own.get("default")
    if not own:
        raise ValueError("the tokenizer has no chat template; pass one with {% generation %} markers")
    from trl.chat_template_utils import get_training_chat_template

    if has_generation_markers(own):
        patched = None
        try:
            patched = get_training_chat_template(tokenizer)
        except ValueError:
            patched = None
        return patched or own
    try:
        patched = get_training_chat_template(tokenizer)
    except ValueError:
        patched = None
    if patched:
        return patched
    if "<|im_start|>" in own and "<tool_call>" in own:
        return chatml_training_template()
    raise ValueError(
        "no training template is known for this tokenizer's chat template: pass a template file with "
        "{% generation %} ... {% endgeneration %} around each assistant turn (its end-of-turn token included)"
    )
