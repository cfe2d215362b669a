"""Supervised fine-tuning on whole agent sessions: `masking` (tool observations out of the loss),
`templates` (chat templates), `config` and `train` (TRL + LoRA), `check` (a dataset against a model),
`select` (checkpoints chosen by agentic success, not loss), `local_llm` (a checkpoint as a litellm
provider) and `tiny_model` (an offline model for tests). Builds on `qaflow`; the core never imports it.
"""
