"""The multi-agent task generator: propose -> build -> validate (code) -> review, with
failures sent back to the builder for repair, up to `max_rounds` builds per task.

Each requested task is a *slot* with its own state file (`<out>/state/<slot>.json`,
written atomically after every step), so a run that is interrupted, or stopped by the
budget, resumes where it stopped: finished slots are skipped, a pending slot continues at
its stage with its proposal, last build and feedback. Accepted tasks are written as
Harbor dirs under `<out>/accepted/`; rejected ones keep their last build under
`<out>/rejected/` and their reasons in the state file. `<out>/report.json` holds the
counts and the cost report.

Left out: sharing one validation image cache across hosts; repairing a proposal (a
near-duplicate proposal is rejected, not re-proposed).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from tqdm.auto import tqdm

from tbrl_lib.aio import run_sync
from tbrl_lib.synth import roles
from tbrl_lib.synth.dedup import most_similar
from tbrl_lib.synth.llm import BudgetExceeded, CostMeter, ScopedMeter, StructuredLLM
from tbrl_lib.tasks import write_tasks
from tbrl_lib.tasks.model import Difficulty, Task


class Verdict(Protocol):
    """What the validator says about one task (`tbrl_lib.evaluate.validate.ValidationResult`)."""

    @property
    def ok(self) -> bool: ...

    reasons: list[str]


Validator = Callable[[Task], Awaitable[Verdict]]
"""Code, not an LLM: build, no-op must fail, solution must pass, stable, within limits
(`tbrl_lib.evaluate.batch_validate.task_validator`)."""


@dataclass
class PipelineConfig:
    out_dir: str
    """Run folder: state/, accepted/, rejected/, report.json."""
    requests: list[tuple[str, str]]
    """(category, difficulty) per task to generate."""
    max_rounds: int = 3
    """Builds per task (the first plus repairs) before it is rejected."""
    concurrency: int = 4
    """Slots worked on at once (LLM calls and validations)."""
    budget_usd: float | None = None
    """Stop starting LLM calls once this much is spent (None = no cap)."""
    dedup_threshold: float = 0.6
    """Instruction similarity (shingled Jaccard) to an existing task that rejects a build."""

    def __post_init__(self) -> None:
        if self.max_rounds < 1:
            raise ValueError(f"max_rounds must be >= 1, got {self.max_rounds}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        for i, (category, difficulty) in enumerate(self.requests):
            if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", category):
                raise ValueError(
                    f"requests[{i}]: category {category!r} must be lower-case "
                    "words joined by '-' (e.g. 'system-administration')"
                )
            Difficulty(difficulty)  # raises naming the bad value


INFRA_RETRIES = 1
"""Extra validation attempts when the validator reports an infrastructure error."""


def slot_id(index: int, category: str, difficulty: str) -> str:
    return f"{index:04d}-{category}-{difficulty.replace('_', '-')}"


class Pipeline:
    def __init__(
        self,
        config: PipelineConfig,
        llm: StructuredLLM,
        validator: Validator,
        existing: list[Task] | None = None,
    ) -> None:
        self.config, self.llm, self.validator = config, llm, validator
        self.out = Path(config.out_dir)
        self.existing = list(existing or [])
        self.meter = CostMeter(config.budget_usd)
        self.accepted: list[Task] = []
        self.stopped: str | None = None

    # -- state on disk -------------------------------------------------------------
    def _path(self, sid: str) -> Path:
        return self.out / "state" / f"{sid}.json"

    def _load(self, sid: str, category: str, difficulty: str) -> dict[str, Any]:
        path = self._path(sid)
        if path.exists():
            return json.loads(path.read_text())
        return {
            "slot": sid,
            "category": category,
            "difficulty": difficulty,
            "status": "pending",
            "stage": "propose",
            "round": 0,
            "proposal": None,
            "spec": None,
            "feedback": [],
            "history": [],
            "reasons": [],
            "cost_usd": 0.0,
        }

    def _save(self, state: dict[str, Any]) -> None:
        path = self._path(state["slot"])
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        os.replace(tmp, path)

    # -- one slot --------------------------------------------------------------------
    async def _run_slot(self, index: int, category: str, difficulty: str) -> dict[str, Any]:
        sid = slot_id(index, category, difficulty)
        state = self._load(sid, category, difficulty)
        if state["status"] != "pending":
            if state["status"] == "accepted":
                self.accepted.append(self._task(state))
            return state
        level = Difficulty(difficulty)
        meter = ScopedMeter(self.meter)
        try:
            await self._advance(state, level, meter)
        except BudgetExceeded as err:
            self.stopped = str(err)
        except Exception as err:  # an API outage or a bad answer: keep the slot resumable
            state.setdefault("errors", []).append(f"{state['stage']}: {type(err).__name__}: {err}")
        finally:
            state["cost_usd"] = round(state["cost_usd"] + meter.spent_usd, 6)
            self._save(state)
        return state

    async def _advance(self, state: dict[str, Any], level: Difficulty, meter: ScopedMeter) -> None:
        if state["stage"] == "propose":
            avoid = [
                t.title or t.id
                for t in self.existing + self.accepted
                if t.category == state["category"]
            ]
            state["proposal"] = await roles.propose(
                self.llm, meter, state["category"], level, avoid
            )
            self._step(state, "build", "proposed", [state["proposal"].get("title", "")])
        while state["status"] == "pending":
            if state["stage"] == "build":
                if state["round"] >= self.config.max_rounds:
                    return self._finish(state, "rejected", state["feedback"] or ["no rounds left"])
                try:  # a round counts once the builder answered (not on API errors)
                    spec = await roles.build(
                        self.llm, meter, state["proposal"], level, state["spec"], state["feedback"]
                    )
                except roles.SpecError as err:
                    spec, problem = None, err
                state["round"] += 1
                try:
                    if spec is None:
                        raise problem
                    state["spec"] = spec
                    task = self._task(state)
                except roles.SpecError as err:
                    self._step(state, "build", "unusable build", [str(err)], repair=True)
                    continue
                twin, sim = most_similar(task, self.existing + self.accepted)
                if sim >= self.config.dedup_threshold:
                    return self._finish(
                        state,
                        "rejected",
                        [f"near-duplicate of {twin} (instruction similarity {sim:.2f})"],
                    )
                self._step(state, "validate", "built", [])
            elif state["stage"] == "validate":
                verdict = await self._validate(self._task(state))
                if verdict.ok:
                    self._step(state, "review", "validated", [])
                else:
                    self._step(state, "build", "validation failed", verdict.reasons, repair=True)
            elif state["stage"] == "review":
                review = await roles.review(self.llm, meter, self._task(state))
                if review["aligned"]:
                    return self._finish(state, "accepted", [review.get("summary", "")])
                self._step(
                    state,
                    "build",
                    "critic found issues",
                    review["issues"] or ["critic: not aligned"],
                    repair=True,
                )

    async def _validate(self, task: Task) -> Verdict:
        """The validator's verdict; an infrastructure error (Docker failed, nothing is known
        about the task) is retried instead of being blamed on the builder."""
        for _attempt in range(INFRA_RETRIES + 1):
            verdict = await self.validator(task)
            if getattr(verdict, "verdict", None) != "error":
                return verdict
        raise RuntimeError(
            f"validation of {task.id} hit infrastructure errors "
            f"{INFRA_RETRIES + 1} times: {'; '.join(verdict.reasons)}"
        )

    def _step(
        self,
        state: dict[str, Any],
        next_stage: str,
        outcome: str,
        notes: list[str],
        repair: bool = False,
    ) -> None:
        state["history"].append(
            {"round": state["round"], "stage": state["stage"], "outcome": outcome, "notes": notes}
        )
        state["stage"] = next_stage
        if repair:
            state["feedback"] = notes
        self._save(state)

    def _finish(self, state: dict[str, Any], status: str, reasons: list[str]) -> None:
        state["status"], state["reasons"], state["stage"] = status, reasons, "done"
        state["history"].append(
            {"round": state["round"], "stage": "done", "outcome": status, "notes": reasons}
        )
        try:
            task = self._task(state)
        except roles.SpecError:
            task = None
        if task is not None:
            where = self.out / status
            write_tasks([task], "harbor", where, progress=False)
            if status == "accepted":
                self.accepted.append(task)

    def _task(self, state: dict[str, Any]) -> Task:
        if not state.get("spec"):
            raise roles.SpecError("no build yet")
        proposal = state["proposal"] or {}
        task_id = f"llm-{state['slot']}"
        return roles.spec_to_task(
            state["spec"],
            task_id,
            state["category"],
            Difficulty(state["difficulty"]),
            proposal.get("title"),
            location=str(self._path(state["slot"])),
        )

    # -- the whole run ------------------------------------------------------------------
    async def run(self, progress: bool = True) -> dict[str, Any]:
        self.out.mkdir(parents=True, exist_ok=True)
        gate = asyncio.Semaphore(self.config.concurrency)
        bar = None
        if progress:
            bar = tqdm(total=len(self.config.requests), desc="synth", unit="task")

        async def one(i: int, category: str, difficulty: str) -> dict[str, Any]:
            async with gate:
                if self.stopped:
                    return self._load(slot_id(i, category, difficulty), category, difficulty)
                state = await self._run_slot(i, category, difficulty)
            if bar is not None:
                bar.update(1)
            return state

        states = await asyncio.gather(
            *(one(i, c, d) for i, (c, d) in enumerate(self.config.requests))
        )
        if bar is not None:
            bar.close()
        report = self._report(states)
        (self.out / "report.json").write_text(json.dumps(report, indent=2))
        return report

    def _report(self, states: list[dict[str, Any]]) -> dict[str, Any]:
        counts = {
            s: sum(st["status"] == s for st in states) for s in ("accepted", "rejected", "pending")
        }
        return {
            "counts": counts,
            "stopped": self.stopped,
            "cost": self.meter.report(),
            "config": asdict(self.config),
            "slots": [
                {
                    "slot": st["slot"],
                    "status": st["status"],
                    "rounds": st["round"],
                    "cost_usd": st["cost_usd"],
                    "reasons": st["reasons"],
                    "errors": st.get("errors", []),
                }
                for st in states
            ],
        }


def run_pipeline(
    config: PipelineConfig,
    llm: StructuredLLM,
    validator: Validator,
    existing: list[Task] | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Synchronous entry point (CLI, notebook); see `Pipeline`."""
    return run_sync(Pipeline(config, llm, validator, existing).run(progress))
