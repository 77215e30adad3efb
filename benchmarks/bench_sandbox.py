"""Sandbox benchmark: the sandbox's costs, each next to the upstream way, in one run.

    python benchmarks/bench_sandbox.py                  # full run (a few minutes on 2 cores)
    python benchmarks/bench_sandbox.py --commands 50 --starts 5 --episodes 8 --levels 1,8

Rows (median and p90 where it is a latency):
- per-command cost of a trivial command: persistent shell vs a fresh `docker exec`;
- container ready for its first command: cold start (create + start + shell) vs a warm
  pool hand-off; teardown (forced remove);
- rollouts/hour of a scripted 20-command episode at each concurrency level: tbrl
  (start, persistent shell, remove), tbrl with a warm pool of `concurrency` containers
  (the wave's start-up overlaps the previous episodes), and upstream (`docker run` with
  default settings, one `docker exec` per command, `docker rm -f`).

`--ray` measures the `ray` backend beside local Docker instead, both through the one public
`open_sandbox` (a local Ray instance this script starts, declaring enough `sandbox` units):
per-command p50/p90 through the persistent shell, ready for the first command (open + one
command), and scripted 20-command episodes/hour at each concurrency level, each measured
twice in the order docker, ray, ray, docker (half the counts each time) so that a load that
drifts during the run weighs on both alike. On one machine the
"straight to the node's engine" alternative IS the local Docker column (over a network it
adds the round trip to the engine); the ray column is the path the backend takes (an actor
per sandbox, holding its unit).

`--storage` measures what holding storage limits costs (`sandbox/backends/docker/storage.py`):
each candidate way of measuring a sandbox's writes (the engine's `SizeRw`, a walk inside this
process, the storage meter) timed on a fresh sandbox's writable layer and on one holding a
copy of the Python standard library, with what each one counts for a sparse file and for many
small files; then per-command p50 and 20-command episodes/hour at each concurrency level
with the meter (tasks capped) and without it (no cap anywhere), in the order with, without,
without, with.

Everything runs on the offline base image and removes what it creates. Numbers depend on
the machine and on whatever else runs on it; compare columns of one run, not runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import time
from collections.abc import Callable

from tqdm import tqdm

from tbrl_lib.docker import base_images, engine
from tbrl_lib.docker.reaper import LABEL_OWNER, LABEL_RUN, owner_label
from tbrl_lib.sandbox import open_sandbox as open_any
from tbrl_lib.sandbox.backends.docker import storage
from tbrl_lib.sandbox.backends.docker.container import DockerSandbox
from tbrl_lib.sandbox.backends.docker.hosts import get_host
from tbrl_lib.sandbox.backends.docker.pool import SandboxPool, open_sandbox
from tbrl_lib.sandbox.config import SandboxConfig
from tbrl_lib.tasks.model import Environment, Limits, Task, Tests

EPISODE = [
    "cd /app",
    "mkdir -p work && cd work",
    "echo 'hello world' > a.txt",
    "cat a.txt",
    "ls -la",
    "wc -c a.txt",
    "export STEP=7",
    "echo $STEP",
    "grep -c hello a.txt",
    "cp a.txt b.txt",
    "sort a.txt b.txt | uniq -c",
    "head -n 1 b.txt",
    "pwd",
    "printf '%s\\n' 3 1 2 | sort -n",
    "test -f b.txt && echo yes",
    "rm b.txt",
    "ls",
    "echo done > status",
    "cat status",
    "true",
]
"""A scripted 20-command episode (trivial commands: the cost measured is the sandbox's)."""
STORAGE_MB = 512
"""The benchmark task's storage cap: 36 sandboxes' caps fit a small disk (the guard's sum)."""


def bench_task(storage_mb: int | None = STORAGE_MB) -> Task:
    return Task(
        id="bench-sandbox",
        instruction="benchmark",
        environment=Environment(dockerfile=f"FROM {base_images.BASE_IMAGE}\n"),
        tests=Tests(pytest="def test_ok():\n    pass\n"),
        limits=Limits(cpus=1, memory_mb=512, storage_mb=storage_mb),
    )


def _stats(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return statistics.median(ordered), p90


async def per_command(config: SandboxConfig, n: int) -> dict[str, list[float]]:
    task = bench_task()
    shell, fresh = [], []
    async with DockerSandbox(task, config) as sb:
        container = sb.host.client.containers.get(sb.container_id)
        for _ in tqdm(range(n), desc="per-command", leave=False):
            t0 = time.perf_counter()
            await sb.run("true")
            shell.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await asyncio.to_thread(container.exec_run, ["bash", "-c", "true"])
            fresh.append(time.perf_counter() - t0)
    return {"persistent shell": shell, "fresh docker exec": fresh}


async def start_and_teardown(config: SandboxConfig, n: int) -> dict[str, list[float]]:
    task = bench_task()
    cold, warm, teardown = [], [], []
    for _ in tqdm(range(n), desc="cold start", leave=False):
        t0 = time.perf_counter()
        sb = DockerSandbox(task, config)
        await sb.start()
        await sb.run("true")
        cold.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await sb.close()
        teardown.append(time.perf_counter() - t0)
    async with SandboxPool(task, 2, config) as pool:
        for _ in tqdm(range(n), desc="warm pool", leave=False):
            await pool.wait_ready(120)
            t0 = time.perf_counter()
            sb = await pool.acquire()
            await sb.run("true")
            warm.append(time.perf_counter() - t0)
            await sb.close()
    return {"cold start": cold, "warm pool": warm, "teardown": teardown}


async def _episode_tbrl(task: Task, config: SandboxConfig, pool: SandboxPool | None = None) -> None:
    async with open_sandbox(task, config, pool=pool) as sb:
        for cmd in EPISODE:
            await sb.run(cmd)


def _episode_upstream(client, image: str, run_label: str) -> None:
    container = client.containers.run(
        image,
        ["sleep", "infinity"],
        detach=True,
        labels={LABEL_OWNER: owner_label(), LABEL_RUN: run_label},
    )
    try:
        for cmd in EPISODE:
            container.exec_run(["bash", "-c", f"cd /app && {cmd}"])
    finally:
        container.remove(force=True)


async def throughput(
    config: SandboxConfig, levels: list[int], episodes: int
) -> dict[str, dict[int, float]]:
    task = bench_task()
    client = engine.client(timeout=300)
    out: dict[str, dict[int, float]] = {"tbrl": {}, "tbrl + warm pool": {}, "upstream": {}}

    async def level(concurrency: int, one: Callable) -> float:
        count = max(episodes, concurrency)
        gate = asyncio.Semaphore(concurrency)
        bar = tqdm(total=count, desc=f"episodes x{concurrency}", leave=False)

        async def guarded():
            async with gate:
                await one()
                bar.update()

        t0 = time.perf_counter()
        await asyncio.gather(*(guarded() for _ in range(count)))
        bar.close()
        return count / (time.perf_counter() - t0) * 3600

    for c in levels:
        out["tbrl"][c] = await level(c, lambda: _episode_tbrl(task, config))
        async with SandboxPool(task, c, config) as pool:
            await pool.wait_ready(300)
            out["tbrl + warm pool"][c] = await level(c, lambda: _episode_tbrl(task, config, pool))
        out["upstream"][c] = await level(
            c,
            lambda: asyncio.to_thread(
                _episode_upstream, client, base_images.BASE_IMAGE, config.run_id
            ),
        )
    client.close()
    return out


def run_benchmark(
    commands: int = 200,
    starts: int = 10,
    episodes: int = 32,
    levels: list[int] | None = None,
    out: str | None = None,
    echo=print,
) -> dict:
    """Run every measurement, print the table, return (and optionally save) the numbers."""
    levels = levels or [1, 8, 32]
    config = SandboxConfig(run_id="bench", docker={"max_concurrency": max(levels) + 4})

    async def main():
        await asyncio.to_thread(engine.ensure_engine)
        latencies = await per_command(config, commands)
        latencies |= await start_and_teardown(config, starts)
        rates = await throughput(config, levels, episodes)
        return latencies, rates

    latencies, rates = asyncio.run(main())
    result = {
        "latency_ms": {
            k: dict(zip(("p50", "p90"), (x * 1000 for x in _stats(v))))
            for k, v in latencies.items()
        },
        "episodes_per_hour": rates,
    }
    _print(result, echo)
    if out:
        with open(out, "w") as handle:
            json.dump(result, handle, indent=2)
    return result


async def _backend_episode(task: Task, config: SandboxConfig) -> None:
    async with open_any(task, config) as sb:
        for cmd in EPISODE:
            await sb.run(cmd)


async def _one_backend(config: SandboxConfig, commands: int, starts: int, levels, episodes):
    task = bench_task()
    shell, ready = [], []
    async with open_any(task, config) as sb:  # warm: image, volumes, actor
        for _ in tqdm(range(commands), desc=f"{config.backend} per-command", leave=False):
            t0 = time.perf_counter()
            await sb.run("true")
            shell.append(time.perf_counter() - t0)
    for _ in tqdm(range(starts), desc=f"{config.backend} ready", leave=False):
        t0 = time.perf_counter()
        async with open_any(task, config) as sb:
            await sb.run("true")
            ready.append(time.perf_counter() - t0)
    rates = {}
    for c in levels:
        count = max(episodes, c)
        gate = asyncio.Semaphore(c)

        async def guarded(gate: asyncio.Semaphore = gate) -> None:
            async with gate:
                await _backend_episode(task, config)

        t0 = time.perf_counter()
        await asyncio.gather(*(guarded() for _ in range(count)))
        rates[c] = count / (time.perf_counter() - t0) * 3600
    return {"command": shell, "ready": ready}, rates


def run_ray_comparison(
    commands: int, starts: int, episodes: int, levels: list[int], out, echo=print
):
    """The `ray` backend beside local Docker in one run (see module docstring)."""
    import ray  # noqa: PLC0415 - the ray extra, only for this comparison

    units = max(levels) + 4
    ray.init(resources={"sandbox": units}, namespace="tbrl", include_dashboard=False,
             log_to_driver=False)  # fmt: skip
    hosts = {"max_concurrency": units}
    docker_config = SandboxConfig(run_id="bench-ray", docker=hosts)
    ray_config = docker_config.model_copy(update={"backend": "ray"})
    result: dict = {"latency_ms": {}, "episodes_per_hour": {}}
    samples: dict[str, dict[str, list[float]]] = {"docker": {}, "ray": {}}
    rates_seen: dict[str, list[dict]] = {"docker": [], "ray": []}
    try:  # ABBA: docker, ray, ray, docker, so a load that drifts during the run cancels out
        for config in (docker_config, ray_config, ray_config, docker_config):
            lat, rates = asyncio.run(
                _one_backend(config, commands // 2, max(1, starts // 2), levels, episodes // 2)
            )
            for what, values in lat.items():
                samples[config.backend].setdefault(what, []).extend(values)
            rates_seen[config.backend].append(rates)
    finally:
        ray.shutdown()
    for backend, by_what in samples.items():
        for what, values in by_what.items():
            p50, p90 = _stats(values)
            result["latency_ms"][f"{backend} {what}"] = {"p50": p50 * 1e3, "p90": p90 * 1e3}
        result["episodes_per_hour"][backend] = {
            c: statistics.mean(r[c] for r in rates_seen[backend]) for c in levels
        }
    lat, rates = result["latency_ms"], result["episodes_per_hour"]
    echo(f"{'measure':<34}{'docker':>10}{'ray':>10}{'ray - docker':>14}")
    for what in ("command", "ready"):
        for q in ("p50", "p90"):
            d, r = lat[f"docker {what}"][q], lat[f"ray {what}"][q]
            name = {"command": "per command", "ready": "ready for 1st command"}[what]
            echo(f"{name + ' ' + q + ' (ms)':<34}{d:>10.2f}{r:>10.2f}{r - d:>+14.2f}")
    for c in levels:
        d, r = rates["docker"][c], rates["ray"][c]
        echo(f"{'episodes/h at c=' + str(c):<34}{d:>10.0f}{r:>10.0f}{(r / d - 1) * 100:>+13.0f}%")
    if out:
        with open(out, "w") as handle:
            json.dump(result, handle, indent=2)
    return result


TREES = {
    "fresh writable layer": "true",
    "+ a copy of the stdlib": "cp -a /usr/lib/python3.13 /app/stdlib",
    "+ 5 GB sparse, 20k 1-byte files": (
        "truncate -s 5G /app/sparse && mkdir -p /app/small && cd /app/small && "
        "for i in $(seq 20000); do echo > $i; done; cd /app"
    ),
}
"""Each added to the one before: what a sandbox holds when each way of measuring is timed."""


def _cpu_s(path: str) -> float:
    """CPU seconds of a process (`/proc/PID/stat`) or a cgroup (`cpuacct.usage`), 0 if unreadable."""
    try:
        text = open(path).read()
    except OSError:
        return 0.0
    if path.endswith("cpuacct.usage"):
        return int(text) / 1e9
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure_candidates(samples: int) -> dict:
    """Each way of measuring a sandbox's writes, on each tree: wall ms (p50), CPU ms per
    measurement (the daemon's, this process's or the meter's) and the bytes it counted."""
    out: dict = {}
    async with DockerSandbox(bench_task(), SandboxConfig(run_id="bench-storage")) as sb:
        api, cid = sb.host.client.api, sb.container_id
        meter = storage.meter_for(sb.host)
        paths = storage.writable_paths(api.inspect_container(cid))
        daemon = f"/proc/{open('/var/run/docker.pid').read().strip()}/stat"
        meter_cg = f"/sys/fs/cgroup/cpuacct/docker/{meter.container_id}/cpuacct.usage"
        candidates = {
            "SizeRw (engine API)": (
                lambda: api.containers(filters={"id": cid}, size=True)[0].get("SizeRw", 0),
                daemon,
            ),
            "walk in this process": (lambda: storage.blocks_under(paths, 1 << 62), None),
            "storage meter": (lambda: meter._ask([(paths, 1 << 62)])["used"][0], meter_cg),
        }
        for tree, setup in TREES.items():
            await sb.run(setup, timeout=600)
            for name, (measure, where) in candidates.items():
                walls, cpu0, own0 = [], _cpu_s(where) if where else 0.0, time.process_time()
                for _ in range(samples):
                    t0 = time.perf_counter()
                    counted = await asyncio.to_thread(measure)
                    walls.append(time.perf_counter() - t0)
                cpu = (_cpu_s(where) if where else 0.0) - cpu0 + time.process_time() - own0
                out[f"{tree} | {name}"] = {
                    "wall_ms": statistics.median(walls) * 1e3,
                    "cpu_ms": cpu / samples * 1e3,
                    "counted_mb": counted / 2**20,
                }
    return out


async def _episodes(task: Task, config: SandboxConfig, c: int, count: int):
    """`count` scripted episodes, `c` at once: episodes/hour and every command's latency."""
    gate, latencies = asyncio.Semaphore(c), []

    async def one() -> None:
        async with gate, open_any(task, config) as sb:
            for cmd in EPISODE:
                t0 = time.perf_counter()
                await sb.run(cmd)
                latencies.append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(count)))
    return count / (time.perf_counter() - t0) * 3600, latencies


async def _commands_beside(task: Task, config: SandboxConfig, c: int, n: int) -> list[float]:
    """`n` trivial commands in one sandbox while `c - 1` more of `task` are open (watched
    by the meter when `task` has a cap): the steady cost of watching, without start-ups."""
    async with contextlib.AsyncExitStack() as stack:
        boxes = await asyncio.gather(
            *(stack.enter_async_context(open_any(task, config)) for _ in range(c))
        )
        await asyncio.sleep(2 * storage.POLL_S)  # the meter has measured them all
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            await boxes[0].run("true")
            out.append(time.perf_counter() - t0)
        return out


def run_storage_comparison(
    samples: int, episodes: int, levels: list[int], rounds: int, out, echo=print
):
    """What holding storage limits costs (see module docstring), in one run: the candidates,
    then `rounds` x (with, without, without, with) phases of `episodes` at each level."""
    config = SandboxConfig(
        run_id="bench-storage", default_storage_mb=None, docker={"hosts": [(None, 40)]}
    )
    tasks = {"with": bench_task(), "without": bench_task(None)}
    result: dict = {"candidates": asyncio.run(measure_candidates(samples))}
    meter = storage.meter_for(get_host(config.docker.hosts[0]))
    cgroup = f"/sys/fs/cgroup/cpuacct/docker/{meter.container_id}/cpuacct.usage"
    daemon = f"/proc/{open('/var/run/docker.pid').read().strip()}/stat"
    beside: dict = {name: {c: [] for c in levels} for name in tasks}
    for _ in range(rounds):
        for name in ("with", "without", "without", "with"):
            for c in levels:
                lat = asyncio.run(_commands_beside(tasks[name], config, c, samples))
                beside[name][c].append(_stats(lat)[0] * 1e3)
    result["commands_beside"] = beside
    phases: list[dict] = []
    for _ in range(rounds):
        for name in ("with", "without", "without", "with"):
            for c in levels:
                meter0, daemon0 = _cpu_s(cgroup), _cpu_s(daemon)
                own0, t0 = time.process_time(), time.perf_counter()
                rate, lat = asyncio.run(_episodes(tasks[name], config, c, max(episodes, c)))
                phases.append({
                    "name": name, "c": c, "episodes_per_hour": rate, "latencies": lat,
                    "wall_s": time.perf_counter() - t0, "own_cpu_s": time.process_time() - own0,
                    "meter_cpu_s": _cpu_s(cgroup) - meter0, "episodes": max(episodes, c),
                    "daemon_cpu_s": _cpu_s(daemon) - daemon0,
                })  # fmt: skip
    result["levels"] = {}
    for c in levels:
        mine = [p for p in phases if p["c"] == c]
        row = {}
        for name in tasks:
            runs = [p for p in mine if p["name"] == name]
            lat = [x for p in runs for x in p["latencies"]]
            row[name] = {
                "episodes_per_hour": statistics.mean(p["episodes_per_hour"] for p in runs),
                "command_p50_ms": _stats(lat)[0] * 1e3,
                "own_cpu_ms_per_episode": 1e3
                * sum(p["own_cpu_s"] for p in runs)
                / sum(p["episodes"] for p in runs),
                "daemon_cpu_ms_per_episode": 1e3
                * sum(p["daemon_cpu_s"] for p in runs)
                / sum(p["episodes"] for p in runs),
            }
        withs = [p for p in mine if p["name"] == "with"]
        row["meter_core_share"] = sum(p["meter_cpu_s"] for p in withs) / sum(
            p["wall_s"] for p in withs
        )
        pairs = list(zip(mine[0::2], mine[1::2], strict=True))  # (with, without) neighbours
        for what in ("episodes_per_hour", "command_p50_ms"):
            ratios = []
            for a, b in pairs:
                w, wo = (a, b) if a["name"] == "with" else (b, a)
                if what == "episodes_per_hour":
                    ratios.append(w[what] / wo[what] - 1)
                else:
                    ratios.append(_stats(w["latencies"])[0] / _stats(wo["latencies"])[0] - 1)
            row[f"{what}_pair_changes"] = ratios
        result["levels"][c] = row
    _print_storage(result, levels, echo)
    if out:
        with open(out, "w") as handle:
            json.dump(result, handle, indent=2)
    return result


def _print_storage(result: dict, levels: list[int], echo) -> None:
    echo(f"{'way of measuring, on':<62}{'wall ms':>9}{'CPU ms':>8}{'counts MB':>11}")
    for key, row in result["candidates"].items():
        echo(f"{key:<62}{row['wall_ms']:>9.2f}{row['cpu_ms']:>8.2f}{row['counted_mb']:>11.1f}")
    echo(
        f"\n{'1 command beside c-1 open sandboxes':<36}{'with':>8}{'without':>9}  p50 ms of each block"
    )
    for c in levels:
        w, wo = result["commands_beside"]["with"][c], result["commands_beside"]["without"][c]
        blocks = " ".join(f"{x:.2f}" for x in w) + " | " + " ".join(f"{x:.2f}" for x in wo)
        echo(
            f"{'p50 ms, c=' + str(c):<36}{statistics.median(w):>8.2f}{statistics.median(wo):>9.2f}  {blocks}"
        )
    echo(f"\n{'20-command episodes':<30}{'with':>10}{'without':>10}{'change':>9}  pairs")
    for c in levels:
        row = result["levels"][c]
        for what, unit in (
            ("command_p50_ms", "per command p50 ms"),
            ("episodes_per_hour", "episodes/h"),
            ("own_cpu_ms_per_episode", "tbrl CPU ms/episode"),
            ("daemon_cpu_ms_per_episode", "dockerd CPU ms/episode"),
        ):
            w, wo = row["with"][what], row["without"][what]
            pairs = " ".join(f"{x * 100:+.0f}%" for x in row.get(f"{what}_pair_changes", []))
            echo(
                f"{unit + ' c=' + str(c):<30}{w:>10.2f}{wo:>10.2f}{(w / wo - 1) * 100:>+8.1f}%  {pairs}"
            )
        echo(
            f"{'meter CPU, share of a core c=' + str(c):<30}{row['meter_core_share'] * 100:>9.2f}%"
        )


def _print(result: dict, echo) -> None:
    lat = result["latency_ms"]
    echo(f"{'measure':<34}{'p50 ms':>10}{'p90 ms':>10}")
    for name in ("persistent shell", "fresh docker exec", "cold start", "warm pool", "teardown"):
        echo(f"{name:<34}{lat[name]['p50']:>10.2f}{lat[name]['p90']:>10.2f}")
    ratio = lat["fresh docker exec"]["p50"] / max(lat["persistent shell"]["p50"], 1e-9)
    echo(f"{'per-command speed-up (p50)':<34}{ratio:>10.1f}x")
    echo("")
    rates = result["episodes_per_hour"]
    echo(
        f"{'20-command episodes / hour':<30}{'tbrl':>8}{'+pool':>8}{'upstream':>10}"
        f"{'ratio':>7}{'+pool':>7}"
    )
    for c, ours in rates["tbrl"].items():
        pooled, theirs = rates["tbrl + warm pool"][c], rates["upstream"][c]
        echo(
            f"{'concurrency ' + str(c):<30}{ours:>8.0f}{pooled:>8.0f}{theirs:>10.0f}"
            f"{ours / theirs:>6.1f}x{pooled / theirs:>6.1f}x"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=200, help="trivial commands per method")
    parser.add_argument("--starts", type=int, default=10, help="containers per start-up method")
    parser.add_argument("--episodes", type=int, default=32, help="episodes per concurrency level")
    parser.add_argument("--levels", default="1,8,32", help="comma-separated concurrency levels")
    parser.add_argument("--out", default=None, help="also write the numbers as JSON here")
    parser.add_argument("--ray", action="store_true", help="the ray backend beside local Docker")
    parser.add_argument("--storage", action="store_true", help="what holding storage costs")
    parser.add_argument("--rounds", type=int, default=2, help="--storage: with/without rounds")
    args = parser.parse_args()
    if args.storage:
        levels = [int(x) for x in args.levels.split(",")]
        run_storage_comparison(args.commands // 4, args.episodes, levels, args.rounds, args.out)
        raise SystemExit(0)
    if args.ray:
        levels = [int(x) for x in args.levels.split(",")]
        run_ray_comparison(args.commands, args.starts, args.episodes, levels, args.out)
        raise SystemExit(0)
    run_benchmark(
        commands=args.commands,
        starts=args.starts,
        episodes=args.episodes,
        levels=[int(x) for x in args.levels.split(",")],
        out=args.out,
    )
