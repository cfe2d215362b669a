"""The stages of `qaflow pipeline run`, one module each, in the order the runner runs them.

- `source`: collect tasks from the configured sources.
- `dedup`: exact and near-duplicate removal.
- `decontam`: drop tasks that overlap the configured benchmark sets.
- `length`: instruction length bounds.
- `mix`: weights, caps, top-k and upsampling; the eval split is written beside the stage's output.
- `augment`: LLM rewrites of the instructions, re-audited (needs a model).
- `audit`: copy the tasks into `OUT/pool` and audit them there.
- `repair`: rule repairs of the tasks that need repair.
- `harden`: process-chain hardened versions, audited before they are kept.
- `rollout`: rollouts of the accepted tasks (needs a model).
- `rollout_filter`: the rollout filters (`qaflow filter`).
- `export`: `OUT/final` and the Hugging Face datasets under `OUT/datasets/`.

`base` holds what every stage shares (`PipelineStep`, `StageContext`, `StageInfo`) and `config` the
pipeline's config models. The runner, resuming included, is `curation.pipeline.Pipeline`.
"""
