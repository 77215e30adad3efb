"""Ray itself, behind four functions: connect, place a sandbox unit, find a node's host
actor, read the cluster's capacity. The only module of the backend that imports `ray`
(lazily: Ray is the optional extra `ray`; without it one line says how to install it).

A rollout's unit is a placement group of one bundle `{resource: 1}`: Ray's scheduler picks
a node with a free unit and the group waits (pending) while every unit of the cluster is
held, by any job; removing the group gives the unit back. The cluster is found the Ray way:
`RaySettings.address`, else `RAY_ADDRESS`, else a local `ray.init()` that declares
`LOCAL_UNITS` of the resource (a laptop's cluster of one).
"""

from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import dataclass
from typing import Any

from tbrl_lib.sandbox.backend import Capacity, EngineUnavailable, Place
from tbrl_lib.sandbox.backends.ray.host import SandboxHost
from tbrl_lib.sandbox.config import RaySettings

LOCAL_UNITS = 8
"""Sandbox units a local `ray.init()` (no address anywhere) declares."""
HOST_PREFIX = "tbrl-sandbox-host-"
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


@dataclass
class Unit:
    """One reserved `resource` unit: its placement group and the node it is on."""

    group: Any
    node_id: str

    def release(self) -> None:
        ray_module().util.remove_placement_group(self.group)


async def reserve(settings: RaySettings) -> Unit:
    """A unit on whichever node Ray picks; waits (up to `placement_timeout_s`) while the
    cluster is full. `TimeoutError` past it."""
    ray = connect(settings)
    group = ray.util.placement_group([{settings.resource: 1}], strategy="STRICT_PACK")
    try:
        await asyncio.wait_for(group.ready(), settings.placement_timeout_s)
        table = await asyncio.to_thread(ray.util.placement_group_table, group)
    except BaseException:
        ray.util.remove_placement_group(group)
        raise
    return Unit(group, table["bundles_to_node_id"][0])


_HOSTS: dict[tuple[str, str], Any] = {}


def host_for(settings: RaySettings, node_id: str) -> Any:
    """The node's `SandboxHost` actor handle: created on that node on first use (by any job
    in the namespace), found by name after that. Detached: it outlives the job that made it,
    so jobs sharing a node share it."""
    key = (settings.namespace, node_id)
    if key not in _HOSTS:
        ray = connect(settings)
        strategy = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(
            node_id, soft=False
        )
        actor = ray.remote(SandboxHost).options(
            name=HOST_PREFIX + node_id,
            namespace=settings.namespace,
            get_if_exists=True,
            lifetime="detached",
            num_cpus=0,
            max_concurrency=10_000,
            scheduling_strategy=strategy,
        )
        _HOSTS[key] = actor.remote(node_id)
    return _HOSTS[key]


def forget_host(settings: RaySettings, node_id: str) -> None:
    """Drop a cached handle (its node was lost)."""
    _HOSTS.pop((settings.namespace, node_id), None)


def sandbox_nodes(settings: RaySettings) -> list[dict]:
    """The live nodes that declare `resource` (a head without it runs no sandbox)."""
    ray = connect(settings)
    return [
        n
        for n in ray.nodes()
        if n.get("Alive") and n.get("Resources", {}).get(settings.resource, 0) > 0
    ]


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
