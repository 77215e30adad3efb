"""`tbrl agent prompt|parse|run|tiny-model`: the system prompt, the parser, one rollout, the
tiny model, from a shell.

Thin over `prompts.system_prompt`, `parse_actions`, `tbrl_lib.rollout.run_rollout` (the one
rollout training and evaluation run) and `tbrl_lib.models.tiny_corpus.build_tiny_model`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from tbrl_lib.agent.config import EpisodeLimits
from tbrl_lib.agent.parser import ParseError, parse_actions
from tbrl_lib.agent.prompts import system_prompt
from tbrl_lib.agent.trajectory import Trajectory
from tbrl_lib.aio import run_sync
from tbrl_lib.console import console
from tbrl_lib.evaluate.harness import require_credentials
from tbrl_lib.models import SPEC_HELP, make_policy
from tbrl_lib.models.tiny_corpus import build_tiny_model
from tbrl_lib.rewards import RewardConfig, judge_for
from tbrl_lib.rollout import RolloutConfig, run_rollout
from tbrl_lib.sandbox import backend_for
from tbrl_lib.tasks import load_tasks
from tbrl_lib.tasks.console import LENIENT_HELP, print_load_report
from tbrl_lib.workspace import workspace_path

app = typer.Typer(no_args_is_help=True, help="The agent: prompt, parser, episodes, tiny model.")


@app.command()
def prompt() -> None:
    """Print the rendered system prompt (default limits)."""
    typer.echo(system_prompt())


@app.command()
def parse(
    path: str = typer.Argument("-", help="File with one assistant reply; '-' reads stdin."),
) -> None:
    """Parse one reply: each action as a JSON record, each error as the model would read it."""
    text = sys.stdin.read() if path == "-" else Path(path).read_text()
    result = parse_actions(text)
    for item in result.items:
        typer.echo(item.message if isinstance(item, ParseError) else json.dumps(item.record()))
    raise typer.Exit(1 if result.errors else 0)


@app.command()
def run(
    tasks: str = typer.Argument(
        ..., help="A task directory or a directory of tasks (any format load_tasks reads)."
    ),
    task_id: str = typer.Option("", help="Which task; empty means the first."),
    policy: str = typer.Option("oracle", help=SPEC_HELP.removeprefix("policy specs: ")),
    out: str = typer.Option(
        "",
        show_default=False,
        help="Where the trajectory JSONL is appended (default: the workspace's "
        "outputs/agent/trajectory.jsonl).",
    ),
    max_turns: int = typer.Option(50, help="Turn limit of the episode."),
    max_new_tokens: int = typer.Option(
        4096, help="Tokens one reply may generate (a CPU-run model: ~100)."
    ),
    prompt_style: str = typer.Option(
        "full",
        "--system-prompt",
        help="`full` (every tool, ~2k tokens) or `compact` (a few lines).",
    ),
    judge: str = typer.Option("rule", help="Judge of the reward (rule, anthropic:MODEL, none)."),
    lenient: bool = typer.Option(False, help=LENIENT_HELP),
) -> None:
    """Run one rollout (sandbox, episode, tests, judge) and save its trajectory: the same
    rollout training and evaluation run."""
    backend_for().check("tbrl agent run")
    loaded, report = load_tasks(tasks, "lenient" if lenient else "strict", progress=False)
    print_load_report(console(), report)
    matching = [t for t in loaded if t.id == task_id] if task_id else loaded[:1]
    if not matching:
        raise typer.BadParameter(
            f"no task {task_id!r} in {tasks}; tasks: {', '.join(t.id for t in loaded[:20])}"
        )
    task = matching[0]
    policy_obj = make_policy(policy)
    require_credentials(policy_obj)
    episode = EpisodeLimits(
        max_turns=max_turns, max_tokens_per_turn=max_new_tokens, system_prompt=prompt_style
    )
    config = RolloutConfig(episode=episode, reward=RewardConfig(judge=judge))
    result = run_sync(run_rollout(task, policy_obj, config, judge_for(config.reward)))
    out = out or str(workspace_path("outputs", "agent", "trajectory.jsonl"))
    if result.trajectory is not None:
        Trajectory.save_jsonl(result.trajectory, out, append=True)
    if result.task_error:
        why = result.task_error.removeprefix(f"task {task.id}: ")
        typer.echo(f"{task.id}: the task cannot run here, not scored: {why}", err=True)
        raise typer.Exit(1)
    if result.infra_error:
        typer.echo(f"{task.id}: infrastructure error, not scored: {result.infra_error}", err=True)
        raise typer.Exit(1)
    traj, reward = result.trajectory, result.reward
    parts = ", ".join(f"{name} {s:.3f}" for name, s in reward.scores.items() if s is not None)
    typer.echo(
        f"{task.id}: {result.termination} after {len(traj.turns)} turns in {traj.wall_seconds:.1f}s; "
        f"reward {reward.total:.3f} ({parts}) -> {out}"
    )


@app.command("tiny-model")
def tiny_model(
    out_dir: str = typer.Argument(
        "", show_default=False, help="Cache directory (default: the workspace's outputs/models)."
    ),
) -> None:
    """Build (or reuse) the tiny Qwen3 model and print its path."""
    typer.echo(build_tiny_model(out_dir or None))
