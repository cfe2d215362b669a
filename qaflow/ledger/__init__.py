"""The ledger of a pool: a SQLite (WAL) store of task versions and their status, runs, results,
findings and rollouts (`store.Ledger`). `db` is the plumbing (connections, transactions, migrations),
`schema` the tables and migrations, `rollouts` the rollout rows, `status` who may change a status.
"""

from qaflow.ledger.db import LedgerError
from qaflow.ledger.status import StatusWriter
from qaflow.ledger.store import Ledger

__all__ = ["Ledger", "LedgerError", "StatusWriter"]
