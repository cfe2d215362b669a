"""Repair: rule and agent repairs of tasks with findings, in bounded rounds with lineage in the ledger.

`base` defines the `Repairer` and `Reviewer` protocols, `rules` the deterministic `RuleRepairer`,
`rounds.repair_pool` the loop: copy, repair, fresh audit (+ reviewer), next round or stop.
"""
