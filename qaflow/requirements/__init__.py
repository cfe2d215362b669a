"""The requirement graph of a task: requirements, the artifacts they produce and the checks that verify
them, declared in `[metadata.qaflow]` (`spec`), read from its tests (`reading`) or proposed by a model;
`graph` holds it (networkx) with its queries and metrics, `draw` pictures it.

The audit's coverage lint and the hardening transforms both build on it; it imports neither.
"""
