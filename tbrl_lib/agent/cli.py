"""`tbrl agent ...`: the system prompt, the parser, one episode, the tiny model - from a shell.

Thin wrappers over `prompts.system_prompt`, `parse_actions`, `run_episode` and
`build_tiny_qwen3`. Mount with `app.add_typer(agent_app, name="agent")` in `tbrl_lib/cli.py`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import typer

app = typer.Typer(no_args_is_help=True, help="The agent: prompt, parser, episodes, tiny model.")


@app.command()
def prompt() -> None:
    """Print the rendered system prompt (default limits)."""
    from tbrl_lib.agent.prompts import system_prompt

    typer.echo(system_prompt())


@app.command()
def parse(path: str = typer.Argument("-", help="File with one assistant reply; '-' reads stdin.")) -> None:
    """Parse one reply: each action as a JSON record, each error as the model would read it."""
    from tbrl_lib.agent.parser import ParseError, parse_actions

    text = sys.stdin.read() if path == "-" else Path(path).read_text()
    result = parse_actions(text)
    for item in result.items:
        typer.echo(item.message if isinstance(item, ParseError) else json.dumps(item.record()))
    raise typer.Exit(1 if result.errors else 0)


@app.command()
def run(
    tasks: str = typer.Argument(..., help="A task directory or a directory of tasks (any format load_tasks reads)."),
    task_id: str = typer.Option("", help="Which task; empty means the first."),
    policy: str = typer.Option("oracle", help="oracle, noop, hf:PATH, openai:BASE_URL+MODEL, anthropic:MODEL"),
    out: str = typer.Option("outputs/agent/trajectory.jsonl", help="Where the trajectory JSONL is appended."),
    max_turns: int = typer.Option(50, help="Turn limit of the episode."),
    verify: bool = typer.Option(True, help="Run the task's tests afterwards and print the score."),
) -> None:
    """Run one episode in a sandbox and save its trajectory."""
    from tbrl_lib.agent.config import EpisodeLimits
    from tbrl_lib.agent.episode import run_episode
    from tbrl_lib.agent.trajectory import Trajectory
    from tbrl_lib.policies import make_policy
    from tbrl_lib.sandbox import open_sandbox
    from tbrl_lib.tasks import load_tasks

    loaded = load_tasks(tasks, progress=False).tasks
    matching = [t for t in loaded if t.id == task_id] if task_id else loaded[:1]
    if not matching:
        raise typer.BadParameter(f"no task {task_id!r} in {tasks}; tasks: {', '.join(t.id for t in loaded[:20])}")
    task = matching[0]

    async def go():
        async with open_sandbox(task) as sandbox:
            traj = await run_episode(task, make_policy(policy), sandbox, EpisodeLimits(max_turns=max_turns))
            score = None
            if verify:
                from tbrl_lib.rewards.verifier import verify as run_tests
                score = (await run_tests(task, sandbox)).score
            return traj, score

    traj, score = asyncio.run(go())
    Trajectory.save_jsonl(traj, out, append=True)
    typer.echo(f"{task.id}: {traj.termination.value} after {len(traj.turns)} turns in {traj.wall_seconds:.1f}s"
               + (f"; tests score {score:.3f}" if score is not None else "") + f" -> {out}")


@app.command("tiny-model")
def tiny_model(out_dir: str = typer.Argument("outputs/models", help="Cache directory.")) -> None:
    """Build (or reuse) the tiny Qwen3 model and print its path."""
    from tbrl_lib.policies.tiny_model import build_tiny_qwen3

    typer.echo(build_tiny_qwen3(out_dir))
