"""Reinforcement learning from rollouts: `reference` (reference lengths from higher-effort successes of
the same task and round), `reward` (effort-ordered rewards), `advantage` (group-mean, no std
normalisation), `update` and `grpo` (policy updates with observations masked), `round` (collect,
score, update), `gradcheck` and `report`. Builds on `qaflow` and `sft`; the core never imports it.
"""
