"""A tiny Qwen3-style causal LM with random weights and a tokenizer built in code: nothing is downloaded.

The tokenizer is byte-level BPE trained here on a small built-in corpus (any text encodes and
decodes back exactly), with Qwen's chat special tokens added as whole tokens and Qwen3's chat
template (the one TRL ships, which TRL maps to its training variant with generation markers).
Saved with `save_pretrained`, so tests and examples load it through the normal `from_pretrained` path.
"""

from __future__ import annotations

import json
from pathlib import Path

from qaflow.agents.tool_specs import TOOLS

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
]

_CORPUS = [
    "You are a coding agent working in a sandboxed Linux machine. Your working directory is /app.",
    "Read the file, edit the function, run the tests with python3 -m pytest and check the output.",
    'cat /app/calc.py && python3 -c "import calc; print(calc.mean([1, 2, 3]))"',
    "def mean(xs):\n    if not xs:\n        raise ValueError('empty')\n    return sum(xs) / len(xs)\n",
    "exit code: 0\nstdout:\n1.5 2.5\nstderr:\nTraceback (most recent call last):\n",
    json.dumps(TOOLS),
    "The task is complete: I fixed mean and median and verified the results. Done.",
    "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ {}[]()<>:;,.'\"!?/\\|-_=+*&^%$#@~`",
]


def build_tokenizer(vocab_size: int = 1024):
    """A byte-level BPE tokenizer (PreTrainedTokenizerFast) with the chat special tokens and Qwen3's template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen3_chat_template

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIAL_TOKENS[1:2] + SPECIAL_TOKENS[3:],
    )
    fast.chat_template = qwen3_chat_template
    return fast


def build_tiny_model(
    dest: Path,
    *,
    seed: int = 0,
    hidden_size: int = 32,
    layers: int = 2,
    vocab_size: int = 1024,
    tie_embeddings: bool = True,
) -> Path:
    """Write a tiny Qwen3 model (random weights) and its tokenizer to `dest`; returns `dest`. With
    `tie_embeddings=False` the output projection (`lm_head`) is a matrix of its own."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tokenizer = build_tokenizer(vocab_size)
    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=layers,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=hidden_size // 2,
        max_position_embeddings=8192,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        tie_word_embeddings=tie_embeddings,
    )
    model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)
    return dest
