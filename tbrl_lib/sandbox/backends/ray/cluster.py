"""Ray itself, behind a few functions: connect, spawn an actor that holds a sandbox unit, run
a function on every sandbox node, read the cluster's capacity. The only module of the
backend that imports `ray` (lazily: Ray is the optional extra `ray`; without it one line says
how to install it).

A rollout's unit is held by the actor that runs its sandbox (`spawn`): Ray's scheduler puts
the actor on a node with a free unit, keeps it pending while every unit of the cluster is
held (by any job), and frees the unit when the actor ends, or dies with its node. The cluster
is found the Ray way: `RaySettings.address`, else `RAY_ADDRESS`, else a local `ray.init()`
that declares `LOCAL_UNITS` of the resource (a laptop's cluster of one).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from tbrl_lib.engines import EngineUnavailable
from tbrl_lib.sandbox.backend import Capacity, Place
from tbrl_lib.sandbox.config import RaySettings

LOCAL_UNITS = 8
"""Sandbox units a local `ray.init()` (no address anywhere) declares."""
REAP_TIMEOUT_S = 300.0
_LOCK = threading.Lock()


def ray_module() -> Any:
    """`ray`, imported on first use (an optional extra), or one line saying how to get it."""
    try:
        import ray  # noqa: PLC0415 - optional extra, imported only by the ray backend
    except ImportError as err:
        raise EngineUnavailable(
            "sandbox.backend=ray needs Ray: pip install 'tbrl[ray]' (or: pip install 'ray>=2.50')"
        ) from err
    return ray


def connect(settings: RaySettings) -> Any:
    """Join the cluster once per process (see module docstring); returns `ray`."""
    ray = ray_module()
    with _LOCK:
        if not ray.is_initialized():
            address = settings.address or os.environ.get("RAY_ADDRESS")
            extra = {} if address else {"resources": {settings.resource: LOCAL_UNITS}}
            try:
                ray.init(
                    address=address,
                    namespace=settings.namespace,
                    log_to_driver=False,
                    logging_level=logging.WARNING,  # not "Connecting to ..." in every run's log
                    include_dashboard=False if not address else None,
                    **extra,
                )
            except (ConnectionError, RuntimeError) as err:
                raise EngineUnavailable(
                    f"no Ray cluster answers at {address}: {err}; start one (`ray start "
                    f"--head`, workers with --resources '{{\"{settings.resource}\": 8}}') or "
                    "unset RAY_ADDRESS for a local one"
                ) from err
    return ray


def spawn(cls: type, settings: RaySettings) -> Any:
    """An actor of `cls` holding one `resource` unit, on whichever node Ray picks (pending
    while the cluster is full); ended with `end`. Its owner is this process: it dies with
    it, or with its node, and either way its unit is freed."""
    ray = connect(settings)
    actor = ray.remote(cls).options(
        resources={settings.resource: 1},
        num_cpus=0,
        max_restarts=0,
        max_task_retries=0,
        max_concurrency=1000,
    )
    return actor.remote()


def current_node_id() -> str:
    """The id of the node this process runs on (inside an actor or task)."""
    return ray_module().get_runtime_context().get_node_id()


def on_each_node(settings: RaySettings, fn: Callable[..., Any], *args: Any) -> list[tuple]:
    """`fn(*args)` on every live sandbox node (a task pinned there, no CPU): [(node, result)]."""
    ray = connect(settings)
    nodes = sandbox_nodes(settings)
    pinned = [
        ray.remote(fn)
        .options(
            num_cpus=0,
            scheduling_strategy=ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(
                n["NodeID"], soft=False
            ),
        )
        .remote(*args)
        for n in nodes
    ]
    return list(zip(nodes, ray.get(pinned, timeout=REAP_TIMEOUT_S), strict=True))


def end(actor: Any) -> None:
    """End an actor now (its unit is freed)."""
    ray_module().kill(actor, no_restart=True)


def sandbox_nodes(settings: RaySettings) -> list[dict]:
    """The live nodes that declare `resource` (a head without it runs no sandbox)."""
    ray = connect(settings)
    return [
        n
        for n in ray.nodes()
        if n.get("Alive") and n.get("Resources", {}).get(settings.resource, 0) > 0
    ]


def wait_until_dead(settings: RaySettings, node_id: str, timeout: float) -> bool:
    """Wait (up to `timeout`) until Ray counts node `node_id` dead, so that nothing is placed
    on it any more; whether it does."""
    ray = connect(settings)
    deadline = time.monotonic() + timeout
    while any(n["NodeID"] == node_id and n.get("Alive") for n in ray.nodes()):
        if time.monotonic() > deadline:
            return False
        time.sleep(1.0)
    return True


def capacity(settings: RaySettings) -> Capacity:
    """Each live node's units and, where Ray says, how many are free now."""
    ray = connect(settings)
    try:  # the per-node view is not public API; without it, free stays unknown per node
        free = ray._private.state.available_resources_per_node()
    except Exception:  # noqa: BLE001 - an optional detail of a report
        free = {}
    places = []
    for node in sandbox_nodes(settings):
        units = int(node["Resources"][settings.resource])
        left = free.get(node["NodeID"], {}).get(settings.resource) if free else None
        name = f"{node['NodeManagerAddress']} {node['NodeID'][:8]}"
        places.append(Place(name, units, None if left is None else int(left)))
    total_free = ray.available_resources().get(settings.resource, 0)
    notes = [f"{int(total_free)} of {sum(p.capacity for p in places)} units free"]
    return Capacity("ray", tuple(places), shared=True, notes=notes)
