"""`tbrl eval` commands: run a benchmark, show a run, compare two runs.

    tbrl eval run --tasks data/tasks --policy oracle --attempts 1 --concurrency 4 --out outputs/eval-oracle
    tbrl eval run --tasks data/tasks --policy hf:outputs/x/final --judge rule --set episode.max_turns=20
    tbrl eval --tasks data/tasks --policy oracle ...     (same as `tbrl eval run ...`)
    tbrl eval show outputs/eval-oracle
    tbrl eval compare outputs/eval-a outputs/eval-b
    tbrl eval harbor --tasks data/tasks --limit 3 --policy oracle --out outputs/eval-harbor

Running the same `run` command again on the same --out resumes the run: finished trials
are kept, trials that ended in an infra error are redone, and a different policy, task
source, timeout scale, judge, episode limits or reward weights is refused. `--set` takes
any `RunConfig` setting by dotted path (`episode.max_turns=20`,
`episode.tools.bash_default_timeout=60`, `reward.weights.judge=0`). --attempts and --limit may grow on resume (to add
attempts for pass@k); the summary covers every finished trial in the folder.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from tbrl_lib.console import console
from tbrl_lib.docker.engine import require_engine  # Harbor drives Docker itself
from tbrl_lib.evaluate.harness import require_credentials, run_eval
from tbrl_lib.evaluate.report import compare_runs, comparison_table, summary_table
from tbrl_lib.evaluate.results import RunConfig, RunResults
from tbrl_lib.harbor.runner import HarborRunError, check_policy, check_source, run_harbor
from tbrl_lib.models import make_policy, resolve_model
from tbrl_lib.overrides import merge, parse_overrides, settings_error
from tbrl_lib.run_folder import run_dir
from tbrl_lib.sandbox import backend_for
from tbrl_lib.tasks import load_tasks
from tbrl_lib.tasks.console import LENIENT_HELP, print_load_report

app = typer.Typer(no_args_is_help=False, invoke_without_command=True)

TasksOpt = Annotated[
    Path | None,
    typer.Option(
        "--tasks", help="Task source: Harbor/TB1 task dir or a dir of them, upstream CSV, Parquet."
    ),
]
PolicyOpt = Annotated[
    str,
    typer.Option(
        "--policy",
        help="oracle, noop, hf:MODEL (a folder, smollm2-135m, tiny, a hub id), "
        "openai:BASE_URL+MODEL, anthropic:MODEL.",
    ),
]
AttemptsOpt = Annotated[
    int, typer.Option("--attempts", min=1, help="Attempts per task (pass@k up to this k).")
]
ConcurrencyOpt = Annotated[
    int, typer.Option("--concurrency", min=1, help="Trials running at once.")
]
OutOpt = Annotated[
    Path | None, typer.Option("--out", help="Run folder (results.json); rerun with it to resume.")
]
ScaleOpt = Annotated[
    float,
    typer.Option(
        "--timeout-scale",
        min=0.01,
        help="Multiply every task's agent and test timeout (report says so).",
    ),
]
LimitOpt = Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N tasks.")]
JudgeOpt = Annotated[
    str,
    typer.Option(
        "--judge", help="Judge whose score enters the reward: rule, anthropic:MODEL, a chain, none."
    ),
]
LenientOpt = Annotated[bool, typer.Option("--lenient", help=LENIENT_HELP)]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="A RunConfig setting, KEY=VALUE with dotted keys (episode.max_turns=20); repeatable.",
    ),
]


@app.command()
def run(
    tasks: TasksOpt = None,
    policy: PolicyOpt = "oracle",
    attempts: AttemptsOpt = 1,
    concurrency: ConcurrencyOpt = 1,
    out: OutOpt = None,
    timeout_scale: ScaleOpt = 1.0,
    limit: LimitOpt = None,
    judge: JudgeOpt = "rule",
    settings: SetOpt = None,
    lenient: LenientOpt = False,
) -> None:
    """Run every task K times in fresh sandboxes; write results.json (resumable).

    Exits 1 when trials ended in infra errors (they are not scored); rerunning the same
    command retries them. Tasks whose own image does not build are listed with the reason
    (not scored, not infra errors): the run completed, and exits 0."""
    if tasks is None:
        raise typer.BadParameter(
            "give the tasks to evaluate, e.g. --tasks data/tasks", param_hint="--tasks"
        )

    config = run_config(
        policy=policy,
        tasks_source=str(tasks),
        attempts=attempts,
        concurrency=concurrency,
        timeout_scale=timeout_scale,
        limit=limit,
        reward={"judge": judge},
        settings=settings or [],
    )
    if policy.startswith("anthropic:"):  # an API policy is cheap to build: check its key now
        require_credentials(make_policy(policy))
    if policy.startswith("hf:"):  # a model not fetched: one line naming the fetch, at once
        resolve_model(policy.removeprefix("hf:"))
    backend_for(config.sandbox).check("tbrl eval run")
    loaded = load_tasks(tasks, "lenient" if lenient else "strict")
    print_load_report(console(), loaded.report)
    run_folder = run_dir(out or "", f"eval-{policy.split(':')[0]}")
    results = run_eval(loaded.tasks, config, run_folder)
    report_outcome(
        results,
        run_folder,
        summary_table(results),
        f"see results.json); rerun with --out {run_folder} to retry them",
    )


def main(ctx: typer.Context, **options: Any) -> None:
    """Benchmark a policy on tasks: accuracy with 95% CIs, pass@k, failure modes.

    `tbrl eval --tasks ...` is short for `tbrl eval run --tasks ...`.
    """
    if ctx.invoked_subcommand is not None:
        return
    if options["tasks"] is None:
        typer.echo(ctx.get_help())
        raise typer.Exit(0)
    run(**options)


# The group takes `run`'s options (its signature, so they are declared once).
CONTEXT = inspect.Parameter(
    "ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context
)
main.__signature__ = inspect.Signature(
    [CONTEXT, *inspect.signature(run, eval_str=True).parameters.values()]
)
app.callback()(main)


def run_config(settings: list[str], **values):
    """A `RunConfig` from the CLI's options plus `--set` items; a bad setting is a usage error."""
    try:
        return RunConfig.model_validate(merge(values, parse_overrides(settings)))
    except (ValueError, ValidationError) as err:
        raise typer.BadParameter(settings_error(err, RunConfig), param_hint="--set") from err


@app.command()
def show(
    run_folder: Annotated[Path, typer.Argument(help="A run folder or its results.json.")],
) -> None:
    """Print the summary of a finished (or interrupted) run."""
    console().print(summary_table(RunResults.load(run_folder)))


@app.command()
def compare(
    run_a: Annotated[Path, typer.Argument(help="Run folder A (e.g. the new checkpoint).")],
    run_b: Annotated[Path, typer.Argument(help="Run folder B (e.g. the baseline).")],
) -> None:
    """Paired per-task comparison of two runs: A - B with its 95% interval."""
    cmp = compare_runs(run_a, run_b)
    console().print(comparison_table(cmp, run_a.name, run_b.name))


@app.command()
def harbor(
    tasks: Annotated[
        str | None,
        typer.Option(
            "--tasks", help="Task source (any format tbrl reads); not a Harbor registry dataset."
        ),
    ] = None,
    policy: Annotated[
        str,
        typer.Option("--policy", help="oracle, noop, openai:BASE_URL+MODEL, anthropic:MODEL."),
    ] = "oracle",
    attempts: AttemptsOpt = 1,
    concurrency: ConcurrencyOpt = 1,
    out: OutOpt = None,
    timeout_scale: ScaleOpt = 1.0,
    limit: LimitOpt = None,
    settings: SetOpt = None,
    lenient: LenientOpt = False,
) -> None:
    """Run tbrl's agent inside Harbor (Terminal-Bench 2's harness) on this machine's Docker;
    write results.json, which `tbrl eval compare` sets beside a `tbrl eval run`.

    Builds the Harbor image once (cached). No judge runs in Harbor: the score is the tests'.
    Exits 1 when trials ended in infra errors; tasks whose image does not build are listed
    (not scored) and the run exits 0, as `tbrl eval run` does."""
    if tasks is None:
        raise typer.BadParameter(
            "give the tasks to evaluate, e.g. --tasks data/tasks", param_hint="--tasks"
        )
    try:
        check_source(tasks)
        check_policy(policy)
        if policy.startswith("anthropic:"):  # its key is read inside Harbor: check it here
            require_credentials(make_policy(policy))
    except ValueError as err:
        raise typer.BadParameter(str(err)) from err
    config = run_config(
        policy=policy,
        tasks_source=tasks,
        attempts=attempts,
        concurrency=concurrency,
        timeout_scale=timeout_scale,
        limit=limit,
        reward={"judge": "none"},
        settings=settings or [],
    )
    require_engine("tbrl eval harbor")
    loaded = load_tasks(Path(tasks), "lenient" if lenient else "strict")
    print_load_report(console(), loaded.report)
    run_folder = run_dir(out or "", f"eval-harbor-{policy.split(':')[0]}")
    try:
        results = run_harbor(loaded.tasks[:limit], config, run_folder, log=typer.echo)
    except HarborRunError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from err
    report_outcome(
        results,
        run_folder,
        summary_table(results, title=f"{policy} on {tasks} through Harbor"),
        f"Harbor's log: {run_folder / 'harbor.log'})",
    )


def report_outcome(results: RunResults, run_folder: Path, table: Any, infra_hint: str) -> None:
    """A finished run on the console: its summary `table`, where results.json is, each task
    whose own image did not build (not scored); exit 1 when trials ended in infra errors,
    the message closing with `infra_hint`."""
    console().print(table)
    typer.echo(f"results: {run_folder / 'results.json'}")
    for task_id, reason in results.summary.get("task_error_tasks", {}).items():
        reason = reason.removeprefix(f"task {task_id}: ")
        typer.echo(f"task error (not scored): {task_id}: {reason}", err=True)
    infra = results.summary.get("infra_errors", 0)
    if infra:
        typer.echo(
            f"error: {infra} of {results.summary['n_trials']} trials ended in infra errors "
            f"(not scored; {infra_hint}",
            err=True,
        )
        raise typer.Exit(1)
