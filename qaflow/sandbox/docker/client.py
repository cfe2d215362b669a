"""The process's docker client and its background container remover.

There is one of each per pid, so a forked worker makes its own. `DockerBackend` uses the
client; `DockerSandbox` uses it too, and hands its removal on close to the remover.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait

import docker

_client_lock = threading.Lock()
_clients: dict[int, docker.DockerClient] = {}


def shared_client() -> docker.DockerClient:
    """The process's docker client (one per pid, so a forked worker makes its own).

    Raises:
        docker.errors.DockerException: no daemon answers.
    """
    pid = os.getpid()
    with _client_lock:
        client = _clients.get(pid)
        if client is None:
            client = docker.from_env(max_pool_size=64)
            _clients.clear()
            _clients[pid] = client
        return client


_removal_lock = threading.Lock()
_removal_pools: dict[int, ThreadPoolExecutor] = {}
_removals: set[Future[None]] = set()


def submit_removal(remove: Callable[[], None]) -> None:
    """Run `remove` on the process's background remover (its threads are joined at interpreter exit)."""
    pid = os.getpid()
    with _removal_lock:
        pool = _removal_pools.get(pid)
        if pool is None:
            _removal_pools.clear()
            _removals.clear()
            pool = _removal_pools[pid] = ThreadPoolExecutor(max_workers=4, thread_name_prefix="qaflow-docker-rm")
        future: Future[None] | None
        try:
            future = pool.submit(remove)
            _removals.add(future)
        except RuntimeError:  # the interpreter is shutting down: no new threads, remove here
            future = None
    if future is None:
        remove()
    else:
        future.add_done_callback(_removals.discard)


def wait_for_removals(timeout: float | None = None) -> bool:
    """Wait until the containers closed so far are removed; False if some were still pending at `timeout`."""
    with _removal_lock:
        pending = list(_removals)
    _done, not_done = futures_wait(pending, timeout=timeout)
    return not not_done
