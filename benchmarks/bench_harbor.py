"""tbrl's harness next to Harbor's, same tasks and policy, in one run.

    python benchmarks/bench_harbor.py                     # 3 bundled tasks, concurrency 1
    python benchmarks/bench_harbor.py --limit 6 --concurrency 3 --commands 20

Two policies go through both harnesses: the oracle (a realistic episode: plan, write and run
the reference solution, check, finish) and a scripted episode of `--commands` trivial
commands (`true`, one per turn, from a loopback OpenAI-compatible server), whose tool-call
times are the per-command cost. For each harness and policy: wall time per trial (median),
setup (tbrl: all of a trial outside the agent and the verifier - image check, container,
shell, removal; Harbor: its environment and agent setup phases), agent and verifier time, the
rest of a Harbor trial (stopping and removing its compose project; 0 for tbrl by
definition), and the per-command median and p90 from the trajectories' tool
calls. tbrl's harness: `run_eval` (its persistent shell, its own verifier; judge off, as
Harbor has none). Harbor: `run_harbor` (`harbor run` in its image, tbrl's agent, one
`docker compose exec` per command, the task's `tests/test.sh`).

The Harbor image is built first if missing (its build time is printed); task images are
built by each harness on its first trial and cached after, so run twice and read the second.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import date
from pathlib import Path

from rich.table import Table

from tbrl_lib import REPO_ROOT
from tbrl_lib.agent.actions import render_action
from tbrl_lib.console import console
from tbrl_lib.docker.tool_containers import image_size_bytes
from tbrl_lib.evaluate.harness import run_eval
from tbrl_lib.evaluate.results import RunConfig, RunResults
from tbrl_lib.fake_llm_server.llm_server import LLMServer, RecordedRequest
from tbrl_lib.harbor.image import ensure_harbor_image, image_name
from tbrl_lib.harbor.job import phase_seconds
from tbrl_lib.harbor.runner import run_harbor
from tbrl_lib.tasks import load_tasks


def trivial_script(commands: int):
    """`commands` turns of `true`, then finish, whatever the task."""
    bash, finish = (
        render_action("bash", {"cmd": "true"}),
        render_action("finish", {"message": "ok"}),
    )

    def reply(request: RecordedRequest) -> str:
        turn = sum(m["role"] == "assistant" for m in request.body["messages"])
        return bash if turn < commands else finish

    return reply


def command_seconds(run_dir: Path, results: RunResults) -> list[float]:
    """Every bash call's seconds in the run's saved trajectories."""
    found = []
    for trial in results.trials:
        if not trial.trajectory:
            continue
        path = run_dir / trial.trajectory
        lines = path.read_text().splitlines() if path.suffix == ".jsonl" else [path.read_text()]
        for line in lines:
            for turn in json.loads(line)["turns"]:
                found += [c["seconds"] for c in turn["calls"] if c["kind"] == "bash"]
    return found


def row(harness: str, policy: str, run_dir: Path, results: RunResults) -> dict[str, float | str]:
    trials = [t for t in results.trials if t.failure_mode.value != "infra_error"]
    if harness == "harbor":
        phases = [
            phase_seconds(
                json.loads((run_dir / t.trajectory).parents[1].joinpath("result.json").read_text())
            )
            for t in trials
        ]
        setup = [p["environment_setup"] + p["agent_setup"] for p in phases]
    else:
        setup = [t.total_seconds - t.agent_seconds - t.test_seconds for t in trials]
    other = [  # Harbor: the environment's teardown and the trial's bookkeeping; tbrl: ~0
        t.total_seconds - s - t.agent_seconds - t.test_seconds for t, s in zip(trials, setup)
    ]
    cmds = sorted(command_seconds(run_dir, results))
    return {
        "harness": harness,
        "policy": policy,
        "solved": f"{sum(t.resolved for t in trials)}/{len(results.trials)}",
        "wall_per_trial_s": statistics.median(t.total_seconds for t in trials),
        "setup_s": statistics.median(setup),
        "agent_s": statistics.median(t.agent_seconds for t in trials),
        "verifier_s": statistics.median(t.test_seconds for t in trials),
        "other_s": statistics.median(other),
        "run_wall_s": results.wall_seconds,
        "cmd_p50_ms": 1000 * statistics.median(cmds) if cmds else float("nan"),
        "cmd_p90_ms": 1000 * cmds[int(0.9 * (len(cmds) - 1))] if cmds else float("nan"),
        "commands": len(cmds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=3, help="First N bundled tasks.")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--commands", type=int, default=20, help="Trivial commands per episode.")
    parser.add_argument("--out", type=Path, default=Path("outputs/bench-harbor"))
    args = parser.parse_args()

    image, built = ensure_harbor_image()
    size = image_size_bytes(image_name()) / 1e9
    how = f"built in {built:.0f} s" if built else "cached"
    console().print(f"{image}: {how}, {size:.2f} GB")
    tasks = load_tasks(REPO_ROOT / "data" / "tasks", "strict", progress=False).tasks[: args.limit]
    out = args.out / time.strftime("%Y%m%d-%H%M%S")
    rows = []
    with LLMServer(trivial_script(args.commands)) as server:
        policies = {
            "oracle": "oracle",
            f"{args.commands}x true": f"openai:{server.openai_base_url}+loopback",
        }
        for label, spec in policies.items():
            config = RunConfig(
                policy=spec, concurrency=args.concurrency, reward={"judge": "none"},
                episode={"max_turns": args.commands + 5},
            )  # fmt: skip
            for harness in ("tbrl", "harbor"):
                run_dir = (out / f"{harness}-{label.split()[0]}").resolve()
                if harness == "tbrl":
                    results = run_eval(tasks, config, run_dir, progress=False)
                else:
                    results = run_harbor(tasks, config, run_dir, log=lambda _: None)
                rows.append(row(harness, label, run_dir, results))

    table = Table(
        title=f"tbrl vs Harbor, {len(tasks)} bundled tasks, concurrency {args.concurrency} ({date.today()})"
    )
    for key in rows[0]:
        table.add_column(key, justify="left" if key in ("harness", "policy", "solved") else "right")
    for r in rows:
        table.add_row(*(f"{v:.2f}" if isinstance(v, float) else str(v) for v in r.values()))
    console().print(table)
    (out / "bench.json").write_text(json.dumps(rows, indent=1))
    console().print(f"rows: {out / 'bench.json'}")


if __name__ == "__main__":
    main()
