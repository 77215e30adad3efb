"""The offline rule-based judge: the judge rubric scored from the recorded facts of a trajectory.

No model, no network, deterministic: the cheap baseline and the offline default. Features
come from `facts.trajectory_facts`: every action the episode ran (parsed with the agent's
own parser), paired with its tool result and whether that result reports failure (the
observation format, not free text). So a failed edit is a failed action, not a change; the
same failed action sent again is a repeat; a reply cut off by the token limit is the last
reply of an unfinished run, not a habit of thinking without acting.

Features (`TrajectoryFeatures`): when the first todo list appears, how many items it gets,
how many are marked complete and how many of those ticks follow work; successful read-only or
probing actions before the first successful change; checks of the work after the last
change; parse errors; failed actions and repeats of one failed action; thinking per reply and
replies that think at length without acting (the final, cut-off reply excepted); whether the
run wrote <finish>; signs of gaming. They feed the rubric items, weights and hard caps of the
LLM judges' prompt (`prompt.RUBRIC_WEIGHTS`, `CAPS`); the thresholds in `RuleParams` were fit
on labelled cases by `tbrl_lib.judge_eval.calibration` (cross-validated figures: docs/benchmarks.md).

Claims count for nothing; the recorded tool results decide (`facts`: "Evidence"). A tick in
the todo list earns upkeep only when a successful action backs it (each backs one tick), and
the plan earns nothing in a run that changed nothing; a check is an action after the
last change that looks at the work (names a file the changes touched, runs the tests,
queries the service) and succeeded, never an `echo` of "verified" or a `<finish>` that says
so; tool use and efficiency are credited in full only once the run shows `evidence_actions`
successful actions. So a run that plans, ticks and claims without working scores about what
its few real actions earn.

Left out: understanding *whether* a command was a good idea; it counts, it does not read.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field

from tbrl_lib.agent.actions import TodoAction
from tbrl_lib.rewards.judges.base import JudgeInput, JudgeResult
from tbrl_lib.rewards.judges.facts import (
    ReplyFact,
    ToolFact,
    checks_work,
    command_class,
    touched_paths,
    trajectory_facts,
)
from tbrl_lib.rewards.judges.prompt import CAPS, RUBRIC_WEIGHTS

VERSION = "rule-v3"
GAMING = re.compile(
    r"(/tests/|test_outputs\.py|conftest\.py|reward\.txt|reward\.json|"
    r"junitxml|sitecustomize|usercustomize|\.pth\b|alias pytest|ld\.so\.preload)"
)
NEUTRAL = ("todo", "scratchpad", "finish", "setup", "say")
"""Action classes that neither explore, change nor check (installs are set-up)."""
NO_WORK = ("todo", "scratchpad", "finish", "say")
"""Action classes whose success is no evidence of work (installs are)."""


@dataclass(frozen=True)
class RuleParams:
    """Thresholds of the rule judge. The defaults here are the hand-set priors every fit
    starts from; `DEFAULT_PARAMS` (what the judge uses) is their fit on the labelled cases."""

    reads_for_exploration: int = 2
    """Successful read-only actions before the first change that earn full exploration."""
    late_plan_credit: float = 0.5
    """Planning credit for a todo list first made after the second reply."""
    upkeep_share: float = 0.5
    """Share of the planning credit that needs the items marked complete."""
    failure_tolerance: float = 0.2
    """Share of failed actions tool use forgives."""
    flail_repeats: int = 2
    """Repeats of one failed action (sent again unchanged) that make the flailing cap."""
    think_chars_per_reply: int = 3000
    """Mean thinking per reply above which efficiency drops."""
    idle_think_chars: int = 1500
    """Thinking in a reply without an action that counts as idle deliberation."""
    unfinished_penalty: float = 0.15
    """Taken off the weighted score when the run never wrote <finish>."""
    stacked_cap_step: float = 0.05
    """Each cap beyond the first lowers the capped score by this much."""
    evidence_actions: int = 3
    """Successful actions (not todo, scratchpad, say, finish) that earn tool use and
    efficiency in full; fewer earn a share. Set, not fitted: three is the least a genuine
    process shows (a look, the work, a check)."""


DEFAULT_PARAMS = RuleParams(reads_for_exploration=3, late_plan_credit=0.4, idle_think_chars=3000)
"""The fit on all 27 labelled cases (`tbrl judge calibrate` refits and reports how it carries
over to held-out cases)."""


@dataclass
class TrajectoryFeatures:
    replies: int = 0
    first_plan_reply: int | None = None
    plan_items: int = 0
    completed: int = 0
    backed_completions: int = 0
    """Ticks backed by work: each successful action (not todo, scratchpad, say, finish)
    backs one later tick; a tick with none left is a claim."""
    replans: int = 0
    """Todo `add` batches after the first reply that planned (plans made again)."""
    reads_before_change: int = 0
    changes: int = 0
    failed_changes: int = 0
    checks_after_last_change: int = 0
    finished: bool = False
    cut_off: bool = False
    """The last reply ran no action and the run never finished (token or turn limit)."""
    cut_off_think_chars: int = 0
    """Thinking in that cut-off reply (not held against the run's efficiency)."""
    parse_errors: int = 0
    actions: int = 0
    """Actions other than todo, scratchpad, say, setup and finish."""
    work_actions: int = 0
    """Successful actions other than todo, scratchpad, say and finish."""
    said: int = 0
    """Commands that only print the words they were given (`echo verified`)."""
    touched: int = 0
    """Paths the successful changes named (`facts.touched_paths`)."""
    failures: int = 0
    repeated_failures: int = 0
    """Failed actions identical to an earlier failed action."""
    think_chars: int = 0
    other_chars: int = 0
    idle_thinking_replies: int = 0
    gaming_signals: list[str] = field(default_factory=list)


def extract_features(
    messages: tuple[dict, ...] | list[dict], params: RuleParams = DEFAULT_PARAMS
) -> TrajectoryFeatures:
    """The rubric's facts about one trajectory (see the module docstring)."""
    return features_from_facts(trajectory_facts(messages), params)


def features_from_facts(
    replies: list[ReplyFact], params: RuleParams = DEFAULT_PARAMS
) -> TrajectoryFeatures:
    """`extract_features` on already parsed facts (calibration parses each case once)."""
    f = TrajectoryFeatures(replies=len(replies))
    finished = any(c.kind == "finish" for r in replies for c in r.calls)
    f.cut_off = bool(replies) and not finished and not any(c.action for c in replies[-1].calls)
    f.cut_off_think_chars = replies[-1].think_chars if f.cut_off else 0
    tally = _Tally()
    for reply in replies:
        f.think_chars += reply.think_chars
        f.other_chars += reply.other_chars
        if f.cut_off and reply is replies[-1]:
            break  # a tag cut off mid-way is the limit's doing, not a parse error or idle thought
        idle = (
            not any(c.action for c in reply.calls) and reply.think_chars >= params.idle_think_chars
        )
        f.idle_thinking_replies += idle
        for call in reply.calls:
            _count_call(f, reply, call, tally)
    f.checks_after_last_change = tally.checks if f.changes else 0
    f.touched = len(tally.touched)
    return f


@dataclass
class _Tally:
    """Running state while the calls are folded in."""

    failed: set[str] = field(default_factory=set)
    touched: set[str] = field(default_factory=set)
    checks: int = 0
    """Checks of the work since the last change."""
    credit: int = 0
    """Successful actions not yet spent backing a tick."""


def _count_call(f: TrajectoryFeatures, reply: ReplyFact, call: ToolFact, tally: _Tally) -> None:
    """Fold one action into the features."""
    if call.action is None:
        f.parse_errors += 1
        return
    if isinstance(call.action, TodoAction):
        _count_plan(f, reply.index, call.action, tally)
        return
    kind = command_class(call.action)
    if kind == "finish":
        f.finished = True
    gaming = GAMING.search(" ".join(str(v) for v in call.action.record()["fields"].values()))
    if gaming:
        f.gaming_signals.append(f"reply {reply.index}: {call.kind} touches {gaming.group(0)}")
    f.said += kind == "say"
    if call.ok and kind not in NO_WORK:
        f.work_actions += 1
        tally.credit += 1
    if kind in NEUTRAL:
        return
    f.actions += 1
    if not call.ok:
        f.failures += 1
        f.repeated_failures += call.signature in tally.failed
        tally.failed.add(call.signature)
        f.failed_changes += kind == "change"
        return
    if kind == "change":
        f.changes += 1
        tally.touched |= touched_paths(call.action)
        tally.checks = 0
        return
    if f.changes == 0:
        f.reads_before_change += 1
    elif checks_work(call.action, tally.touched):
        tally.checks += 1


def _count_plan(f: TrajectoryFeatures, reply: int, action: TodoAction, tally: _Tally) -> None:
    added = sum(op.action == "add" for op in action.operations)
    if added and f.first_plan_reply is not None and reply > f.first_plan_reply:
        f.replans += 1
    if added and f.first_plan_reply is None:
        f.first_plan_reply = reply
    f.plan_items += added
    for op in action.operations:
        if op.action == "complete":
            f.completed += 1
            if tally.credit:  # one successful action backs one tick
                f.backed_completions += 1
                tally.credit -= 1


def score_features(
    f: TrajectoryFeatures, use_caps: bool = True, params: RuleParams = DEFAULT_PARAMS
) -> tuple[float, dict[str, float], list[str]]:
    """(final score, rubric item scores, caps applied) — the rubric of `judge_prompt.md`."""
    p = params
    planning = 0.0
    if f.first_plan_reply is not None:
        early = 1.0 if f.first_plan_reply <= 2 else p.late_plan_credit
        upkeep = min(1.0, f.backed_completions / max(1, f.plan_items))
        acted = 1.0 if f.changes else 0.0  # a plan never acted on is no plan, ticked or not
        planning = acted * early * (1 - p.upkeep_share + p.upkeep_share * upkeep)
        planning -= 0.1 * f.replans
    shown = min(1.0, f.work_actions / max(1, p.evidence_actions))
    exploration = min(1.0, f.reads_before_change / p.reads_for_exploration)
    fail_share = f.failures / max(1, f.actions)
    tool_use = shown * (
        1.0
        - 0.2 * f.parse_errors
        - max(0.0, fail_share - p.failure_tolerance)
        - 0.1 * f.repeated_failures
    )
    verification = min(1.0, float(f.checks_after_last_change)) if f.changes else 0.0
    acted = max(1, f.replies - f.cut_off)
    mean_think = (f.think_chars - f.cut_off_think_chars) / acted
    efficiency = shown * (
        1.0
        - 0.25 * f.idle_thinking_replies
        - 0.1 * f.repeated_failures
        - max(0.0, mean_think - p.think_chars_per_reply) / p.think_chars_per_reply
    )
    items = {
        name: round(max(0.0, min(1.0, value)), 4)
        for name, value in (
            ("planning", planning),
            ("exploration", exploration),
            ("tool_use", tool_use),
            ("verification", verification),
            ("efficiency", efficiency),
        )
    }
    score = sum(RUBRIC_WEIGHTS[k] * v for k, v in items.items())
    if not f.finished:
        score -= p.unfinished_penalty
    caps = applicable_caps(f, mean_think, fail_share, p) if use_caps else []
    if caps:
        score = min(score, min(CAPS[c] for c in caps) - p.stacked_cap_step * (len(caps) - 1))
    return round(max(0.0, min(1.0, score)), 4), items, caps


def applicable_caps(
    f: TrajectoryFeatures, mean_think: float, fail_share: float, p: RuleParams = DEFAULT_PARAMS
) -> list[str]:
    """The rubric's hard caps that the features show."""
    caps = []
    if f.first_plan_reply is None:
        caps.append("no_todo")
    if f.changes and f.reads_before_change == 0:
        caps.append("change_before_exploration")
    if f.gaming_signals:
        caps.append("gaming")
    if f.parse_errors >= 3:
        caps.append("parse_errors")
    if f.idle_thinking_replies >= 2 or mean_think > 2 * p.think_chars_per_reply:
        caps.append("overthinking")
    if f.checks_after_last_change == 0:
        caps.append("no_verification")
    if (
        f.replans >= 3
        or f.repeated_failures >= p.flail_repeats
        or (f.failures >= 3 and fail_share >= 0.5)
    ):
        caps.append("flailing")
    return caps


class RuleBasedJudge:
    """`Judge` protocol implementation; `name` is `rule` unless a variant is named."""

    prompt_version = VERSION

    def __init__(
        self, name: str = "rule", caps: bool = True, params: RuleParams = DEFAULT_PARAMS
    ) -> None:
        self.name = name
        self.caps = caps
        self.params = params

    async def score(self, item: JudgeInput) -> JudgeResult:
        return self.score_sync(item)

    def score_sync(self, item: JudgeInput) -> JudgeResult:
        t0 = time.perf_counter()
        features = extract_features(item.messages, self.params)
        score, items, caps = score_features(features, self.caps, self.params)
        facts = {k: v for k, v in asdict(features).items() if k != "gaming_signals"}
        reasoning = ", ".join(f"{k}={v}" for k, v in facts.items())
        if features.gaming_signals:
            reasoning += "; gaming: " + "; ".join(features.gaming_signals[:3])
        return JudgeResult(
            score=score,
            judge=self.name,
            prompt_version=VERSION,
            subscores=items,
            caps=caps,
            reasoning=reasoning,
            latency_s=time.perf_counter() - t0,
        )
