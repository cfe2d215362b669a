"""Rollout jobs: run agents over a pool's tasks and record each attempt.

The record contract itself (`RolloutRecord`) and its polars frame live in `qaflow.models`.
"""
