"""Curation: from task pools and rollouts to training datasets.

`sources` (read pools and datasets), `dedup` and `decontam` (near-duplicates, benchmark overlap),
`task_filters` and `filters` (task and trajectory filters with their funnel), `mixing` (mixes and
upsampling), `augment` (LLM rewrites, audited before they count), `recipes` (ranking by z-score),
`export` (Hugging Face datasets and their cards) and `pipeline` (the batch job over all of them).
Builds on `qaflow`; the core never imports this package.
"""
