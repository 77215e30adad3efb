"""The rollout_func contract with TRL: one rollout per prompt entry, ids/masks aligned,
the mission's reward (tests + judge) as TRL's reward, infra errors masked (zero advantage,
no loss tokens), bugs raised, a run of infra errors stopped, dynamic sampling's refill, and a
real GRPOTrainer step. The runner is the session's `StepRunner` with a scripted rollout
function in `run_rollout`'s place (no sandboxes) and a real `Curriculum`."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict

import pytest

from tbrl_lib.agent.trajectory import Termination, Trajectory
from tbrl_lib.docker.base_images import BASE_IMAGE
from tbrl_lib.rewards import RewardConfig, combine
from tbrl_lib.rewards.parts import Missing
from tbrl_lib.rewards.verifier import TestReport
from tbrl_lib.rollout import RolloutConfig, RolloutResult
from tbrl_lib.tasks.model import Difficulty, Environment, Task
from tbrl_lib.tasks.model import Tests as TaskTests
from tbrl_lib.train.step.curriculum import Curriculum
from tbrl_lib.train.step.hooks import (
    DynamicSampling,
    InfraErrorGuard,
    InfraErrorRateExceeded,
    gather_across,
)
from tbrl_lib.train.step.runner import (
    RolloutFunc,
    RunnerSettings,
    StepRollout,
    StepRunner,
    TaskIndex,
    prompt_key,
    reward_funcs,
    rollout_row,
    to_trl_output,
)


def make_task(task_id: str, instruction: str | None = None, difficulty: str = "medium") -> Task:
    return Task(
        id=task_id,
        instruction=instruction or f"do {task_id}",
        difficulty=Difficulty(difficulty),
        environment=Environment(dockerfile=f"FROM {BASE_IMAGE}\n"),
        tests=TaskTests(pytest="def test_ok():\n    assert True\n"),
    )


def row(task: Task) -> dict:
    return {
        "prompt": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": task.instruction},
        ],
        "task": task.model_dump_json(),
        "task_id": task.id,
    }


def scripted_result(
    task: Task, tests: float, judge: float | None = 1.0, n_turns: int = 2
) -> RolloutResult:
    """A scored rollout as `run_rollout` returns it: prompt of 3 tokens; each turn 2 assistant
    tokens (mask 1) ending in EOS, then 3 env tokens (mask 0). The first token depends on
    the test score, so rollouts of a group differ."""
    completion, mask = [], []
    for turn in range(n_turns):
        completion += [10 + turn + int(tests * 10), 1] + [40, 41, 42]
        mask += [1, 1, 0, 0, 0]
    traj = Trajectory(
        task_id=task.id,
        policy="scripted",
        messages=[],
        termination=Termination.finished,
        prompt_ids=[3, 5, 7],
        completion_ids=completion,
        env_mask=mask,
        logprobs=[-0.5] * len(completion),
    )
    return RolloutResult(
        task.id,
        traj,
        reward=combine({"tests": tests, "judge": Missing("down") if judge is None else judge}),
        tests=TestReport(score=tests, outcomes={"test_ok": tests >= 1.0}),
        termination="finished",
    )


def infra_result(task: Task, reason: str = "sandbox: container_died: gone") -> RolloutResult:
    return RolloutResult(task.id, None, infra_error=reason, infra_kind="container_died")


def scripted_rollout(task: Task, tests: float, n_turns: int = 2) -> StepRollout:
    return StepRollout.from_result(scripted_result(task, tests, n_turns=n_turns))


def make_runner(tasks: list[Task], rollout_fn, curriculum: Curriculum | None = None, **kwargs):
    """A `StepRunner` as the session builds it, with `rollout_fn` in `run_rollout`'s place
    (`async (task, policy, config, judge)`), and `RolloutFunc`, its TRL face."""
    kwargs.setdefault("concurrency", 2)
    kwargs.setdefault("infra", InfraErrorGuard())
    kwargs.setdefault("gather", gather_across)
    settings = RunnerSettings(
        None,
        RolloutConfig(),
        None,
        curriculum or Curriculum({t.id: t.difficulty.value for t in tasks}),
        stub_prompt_ids=lambda t: [3, 5],
        eos_id=1,
        progress=False,
        rollout_fn=rollout_fn,
        **kwargs,
    )
    runner = StepRunner(settings)
    return runner, RolloutFunc(TaskIndex([row(t) for t in tasks]), runner)


# --- TaskIndex --------------------------------------------------------------------------


def test_task_index_finds_the_task_of_a_prompt():
    a, b = make_task("a"), make_task("b")
    index = TaskIndex([row(a), row(b)])
    assert index.task_for(row(b)["prompt"]).id == "b"
    with pytest.raises(KeyError, match="no task in the training set"):
        index.task_for([{"role": "user", "content": "unknown"}])


def test_task_index_refuses_two_tasks_with_one_prompt_and_rows_without_task_json():
    with pytest.raises(ValueError, match="identical prompts"):
        TaskIndex([row(make_task("a", "same")), row(make_task("b", "same"))])
    with pytest.raises(ValueError, match="row 1 lacks a 'prompt' or 'task' column"):
        TaskIndex([{"prompt": "x"}])


def test_prompt_key_depends_on_role_and_content():
    assert prompt_key([{"role": "user", "content": "x"}]) != prompt_key(
        [{"role": "system", "content": "x"}]
    )


# --- output shaping -----------------------------------------------------------------------


def test_the_reward_is_the_missions_mix_and_infra_rows_get_none_from_every_function():
    a = make_task("a")
    good = StepRollout.from_result(scripted_result(a, tests=1.0, judge=0.5))
    no_judge = StepRollout.from_result(scripted_result(a, tests=0.5, judge=None))
    bad = StepRollout.from_result(infra_result(a))
    bad.prompt_ids, bad.completion_ids, bad.env_mask = [3], [1], [0]
    out = to_trl_output([good, no_judge, bad])
    assert set(out["env_mask"][2]) == {0} and out["reward_breakdowns"][2] is None
    funcs, trl_weights = reward_funcs(RewardConfig())
    total, tests, judge = (f(completions=["x"] * 3, **out) for f in funcs)
    assert (
        total[:2] == pytest.approx([0.825, 0.5]) and total[2] is None
    )  # missing judge: renormalised
    assert tests == [1.0, 0.5, None] and judge == [0.5, None, None]
    assert trl_weights == [1.0, 0.0, 0.0]  # total is the reward; the parts are logged
    funcs, trl_weights = reward_funcs(RewardConfig(weights={"budget": 0.1}))
    assert [f.__name__ for f in funcs] == ["tbrl_total", "tbrl_tests", "tbrl_judge", "tbrl_budget"]
    assert trl_weights == [1.0, 0.0, 0.0, 0.0]


def test_logprobs_are_none_when_no_rollout_has_them_and_zero_filled_otherwise():
    a = make_task("a")
    r1, r2 = scripted_rollout(a, 1.0), scripted_rollout(a, 0.0)
    r1.logprobs = r2.logprobs = None
    assert to_trl_output([r1, r2])["logprobs"] is None
    r1.logprobs = [-1.0] * len(r1.completion_ids)
    out = to_trl_output([r1, r2])
    assert out["logprobs"][1] == [0.0] * len(r2.completion_ids)


def test_misaligned_ids_and_mask_are_refused():
    r = scripted_rollout(make_task("a"), 1.0)
    r.env_mask = r.env_mask[:-1]
    with pytest.raises(ValueError, match="completion ids but"):
        to_trl_output([r])


# --- the runner -----------------------------------------------------------------------------


def test_runner_returns_one_rollout_per_entry_in_order_within_the_concurrency_limit():
    tasks = [make_task("a"), make_task("b")]
    running, peak = 0, 0

    async def rollout(task, policy, config, judge):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return infra_result(task) if task.id == "b" else scripted_result(task, 1.0)

    runner, rollout_func = make_runner(tasks, rollout)
    prompts = [row(tasks[0])["prompt"]] * 3 + [row(tasks[1])["prompt"]] * 3  # TRL repeats each
    out = rollout_func(prompts, trainer=None)
    assert out["task_id"] == ["a"] * 3 + ["b"] * 3
    assert all(len(c) == len(m) for c, m in zip(out["completion_ids"], out["env_mask"]))
    assert out["infra_error"] == [False] * 3 + [True] * 3
    assert out["completion_ids"][3] == [1] and out["prompt_ids"][3] == [3, 5]  # masked stub
    records = runner.settings.curriculum.records  # the curriculum never counts infra errors
    assert (records["a"].rollouts, records["a"].solved, records["b"].rollouts) == (3, 3, 0)
    assert peak == 2 and runner.calls == 1


def test_a_bug_in_a_rollout_stops_training_instead_of_being_masked():
    task = make_task("a")

    async def rollout(task, policy, config, judge):
        raise ZeroDivisionError("planted scoring bug")

    _, rollout_func = make_runner([task], rollout)
    with pytest.raises(ZeroDivisionError, match="planted"):
        rollout_func([row(task)["prompt"]] * 2, trainer=None)


def test_a_run_of_infra_errors_stops_with_the_first_errors_named():
    task = make_task("a")
    calls = iter(
        [scripted_result(task, 1.0), infra_result(task, "sandbox: daemon_unreachable: refused")] * 4
    )

    async def rollout(task, policy, config, judge):
        return next(calls)

    runner, rollout_func = make_runner(
        [task], rollout, concurrency=1, infra=InfraErrorGuard(max_rate=0.5, check_after=4)
    )
    rollout_func([row(task)["prompt"]] * 2, trainer=None)  # 1 of 2: under the minimum count
    rollout_func([row(task)["prompt"]] * 2, trainer=None)  # 2 of 4 = 50%: not above the limit
    assert runner.state_dict() == {
        "calls": 2,
        "total": 4,
        "infra_errors": ["a: sandbox: daemon_unreachable: refused"] * 2,
    }
    runner.settings.infra.max_rate = 0.4
    with pytest.raises(InfraErrorRateExceeded, match="daemon_unreachable: refused"):
        rollout_func([row(task)["prompt"]] * 2, trainer=None)


def test_every_decision_uses_the_rows_the_gather_hook_brings_from_every_process():
    task = make_task("a")

    async def rollout(task, policy, config, judge):
        return scripted_result(task, 1.0)

    def two_processes(report):  # this process's report, and a second process's: infra errors
        masked = rollout_row(StepRollout.from_result(infra_result(task)))
        return [report, {"kept": [masked] * 2, "dropped": [], "sampling": {}, "draws": []}]

    runner, _ = make_runner(
        [task], rollout, gather=two_processes, infra=InfraErrorGuard(max_rate=0.9)
    )
    done = runner.step([task, task])
    assert len(done.rollouts) == 2  # this process trains on its own rollouts only
    assert done.metrics["rollout/count"] == 4.0
    assert done.metrics["rollout/infra_error_rate"] == 0.5
    assert runner.settings.curriculum.records["a"].rollouts == 2  # infra rows are never counted
    assert runner.settings.infra.total == 4 and len(runner.settings.infra.errors) == 2


# --- one real GRPOTrainer step on the tiny model -------------------------------------------


@pytest.mark.slow
def test_grpo_trainer_step_honours_env_mask_and_masks_infra_errors(
    tmp_path, tiny_model, tiny_tokenizer
):
    import os

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from tbrl_lib.train.model.trl_compat import install_torch_logprob_head

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    install_torch_logprob_head()
    tasks = [make_task("a"), make_task("b")]
    rows = [row(t) for t in tasks]
    rewards = {"a": iter([1.0, 0.0, 0.0]), "b": iter([1.0, 0.5, 0.0])}
    received = []

    async def episode(task, policy, config, judge):
        if task.id == "b" and not any(r == "b-failed" for r in received):
            received.append("b-failed")
            return infra_result(task)
        return scripted_result(
            task, next(rewards[task.id]), judge=None, n_turns=2 if task.id == "a" else 1
        )

    runner, rollout_func = make_runner(
        tasks, episode, concurrency=4, trajectories_dir=tmp_path / "traj"
    )
    captured = []

    class Capturing(GRPOTrainer):
        def _compute_loss(self, model, inputs):
            captured.append(
                {k: inputs[k].clone() for k in ("advantages", "tool_mask", "completion_mask")}
            )
            return super()._compute_loss(model, inputs)

    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        max_steps=1,
        per_device_train_batch_size=3,
        gradient_accumulation_steps=2,
        num_generations=3,
        learning_rate=1e-3,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        shuffle_dataset=False,
        logging_steps=1,
        disable_tqdm=True,
        max_completion_length=64,
        reward_weights=reward_funcs(RewardConfig())[1],
    )
    trainer = Capturing(
        model=tiny_model,
        reward_funcs=reward_funcs(RewardConfig())[0],
        args=args,
        processing_class=tiny_tokenizer,
        train_dataset=Dataset.from_list(rows),
        rollout_func=rollout_func,
    )
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train()

    assert runner.calls == 1  # one generation for the step: 2 prompts x 3 generations
    # TRL shuffles the generation batch before splitting it into micro-batches: match rows by
    # their loss-token count (task a: 2 turns x 2 assistant tokens; b: 1 turn; the masked stub: 0).
    rows_seen = [
        (float(a), int((t * m).sum()))
        for c in captured
        for a, t, m in zip(c["advantages"], c["tool_mask"], c["completion_mask"])
    ]
    assert len(rows_seen) == 6
    a_adv = sorted(adv for adv, tokens in rows_seen if tokens == 4)
    b_adv = sorted(adv for adv, tokens in rows_seen if tokens == 2)
    stub = [adv for adv, tokens in rows_seen if tokens == 0]
    assert len(a_adv) == 3 and a_adv[0] < 0 and a_adv[1] < 0 and a_adv[2] > 0  # rewards 0, 0, 1
    assert (
        len(b_adv) == 2 and b_adv[0] < 0 < b_adv[1]
    )  # rewards 0.5, 1.0 (infra row not in baseline)
    assert stub == [0.0]  # the infra-error rollout: zero advantage and no loss tokens
    assert any(not (p0 == p1.detach()).all() for p0, p1 in zip(before, trainer.model.parameters()))
    assert len(list((tmp_path / "traj").glob("*.jsonl"))) == 1


def test_rollouts_whose_tests_pass_are_solved_and_consecutive_groups_filter_as_mastered():
    """The default 65/35 reward with the rule judge at 0.1 totals 0.685 for a rollout that
    passes every test: the record says solved (the tests passed, as `eval/solve_rate`
    counts), the step's solved share is 1.0, and two such groups in a row filter the task
    as mastered. A failing one beside it is never solved, whatever its judge score."""
    tasks = [make_task("easy"), make_task("hard")]

    async def rollout(task, policy, config, judge):
        return scripted_result(task, 1.0 if task.id == "easy" else 0.0, judge=0.1)

    curriculum = Curriculum({t.id: t.difficulty.value for t in tasks}, filter_after_groups=2)
    runner, _ = make_runner(tasks, rollout, curriculum)
    first = runner.step([tasks[0]] * 4)
    assert [r.reward for r in first.rollouts] == pytest.approx([0.685] * 4)
    assert all(r.solved for r in first.rollouts)
    assert first.metrics["reward/solved_rate"] == 1.0
    assert curriculum.records["easy"].solve_rate == 1.0 and "easy" in curriculum.active()
    runner.step([tasks[0]] * 4)
    assert curriculum.skipped() == {"easy": "mastered in 2 groups in a row"}
    assert [(r["task_id"], r["status"]) for r in curriculum.report()] == [("easy", "mastered")]
    failing = runner.step([tasks[1]] * 2)
    assert not any(r.solved for r in failing.rollouts)
    assert failing.metrics["reward/solved_rate"] == 0.0
    assert curriculum.records["hard"].solve_rate == 0.0


# --- dynamic sampling (DAPO) ----------------------------------------------------------------


def varying_rollouts():
    """`a` and `d` give every rollout the same score (flat groups); `b` and `c` alternate."""
    counts: dict[str, int] = {}

    async def rollout(task, policy, config, judge):
        counts[task.id] = counts.get(task.id, 0) + 1
        if task.id in ("a", "d"):
            return scripted_result(task, 1.0 if task.id == "a" else 0.0)
        return scripted_result(task, float(counts[task.id] % 2))

    return rollout


def test_flat_groups_are_dropped_and_refilled_until_the_batch_has_signal(tmp_path):
    # the curriculum refills easy first: d (flat too) in round 1, then c (least drawn)
    tasks = [make_task("a"), make_task("b"), make_task("c", difficulty="hard")]
    tasks.append(make_task("d", difficulty="easy"))
    curriculum = Curriculum({t.id: t.difficulty.value for t in tasks})
    sampling = DynamicSampling(curriculum, tasks, group_size=2, rounds=2)
    runner, rollout_func = make_runner(
        tasks, varying_rollouts(), curriculum, sampling=sampling, trajectories_dir=tmp_path
    )

    class Trainer:
        _metrics = {"train": defaultdict(list)}

    by_id = {t.id: t for t in tasks}
    out = rollout_func([row(by_id["a"])["prompt"]] * 2 + [row(by_id["b"])["prompt"]] * 2, Trainer())
    assert out["task_id"] == ["c", "c", "b", "b"]  # a's flat group replaced in place by c's
    assert sampling.last_draws == ["d", "c"]  # never the batch's own tasks a and b
    logged = {k: v[0] for k, v in Trainer._metrics["train"].items() if k.startswith("sampling/")}
    assert logged == {
        "sampling/zero_std_groups": 0.5,
        "sampling/refilled_groups": 1.0,
        "sampling/refill_rollouts": 4.0,
        "sampling/zero_std_after": 0.0,
    }
    counted = {t: r.rollouts for t, r in curriculum.records.items()}
    assert counted == {"a": 2, "b": 2, "c": 2, "d": 2}  # dropped groups are counted too
    assert curriculum.committed_refills == {"d": 1, "c": 1}
    [saved] = tmp_path.glob("*.jsonl")
    lines = [json.loads(x) for x in saved.read_text().splitlines()]
    assert [(r["task_id"], r["dropped"]) for r in lines] == [
        ("c", False), ("c", False), ("b", False), ("b", False),
        ("d", True), ("d", True), ("a", True), ("a", True),
    ]  # fmt: skip


def test_without_refill_or_with_split_groups_the_batch_is_left_alone():
    tasks = [make_task("a"), make_task("b")]
    curriculum = Curriculum({t.id: t.difficulty.value for t in tasks})
    prompts = [row(tasks[0])["prompt"]] * 3 + [row(tasks[1])["prompt"]]
    for sampling in (DynamicSampling(curriculum, tasks, group_size=2), None):
        _, rollout_func = make_runner(tasks, varying_rollouts(), curriculum, sampling=sampling)
        out = rollout_func(prompts, trainer=None)  # groups of 2 would mix a and b: not whole
        assert out["task_id"] == ["a", "a", "a", "b"]
    assert curriculum.committed_refills == {}
