"""Asynchronous rollouts (`grpo.async_rollouts`): the streaming worker behind TRL's protocol
shape, the staleness bound, dynamic sampling at take time, and the importance-sampling
correction, on the real TRL trainer.

Rollouts are scripted in `run_rollout`'s place (no sandboxes), but the trainer tests sample
their tokens and log-probs for real, from the policy the runner hands them: the worker's
copy of the weights. The sandboxed end-to-end run is `test_async_cpu_smoke_run`."""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace

import pytest
import torch
from datasets import Dataset

from tbrl_lib.agent.trajectory import Termination, Trajectory
from tbrl_lib.rewards import combine
from tbrl_lib.rewards.parts import Missing
from tbrl_lib.rollout import RolloutConfig, RolloutResult
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.model.trainer_policy import TrainerPolicy
from tbrl_lib.train.pipeline.async_pipeline import AheadRolloutFunc, importance_weights, ratio_stats
from tbrl_lib.train.pipeline.async_rollouts import (
    LocalWeightTransfer,
    QueuedRollout,
    RolloutWorker,
    group_version,
    is_stale,
)
from tbrl_lib.train.step.curriculum import Curriculum
from tbrl_lib.train.step.runner import StepRollout
from tests.train.conftest import make_model
from tests.train.test_step_runner import make_runner, make_task, row, scripted_result

# --- the worker --------------------------------------------------------------------------


def test_the_worker_runs_the_runners_path_with_its_own_policy_and_keeps_groups_whole():
    tasks = [make_task("a"), make_task("b")]
    policies = []

    async def episode(task, policy, config, judge):
        policies.append(policy)
        await asyncio.sleep(0.01)
        return scripted_result(task, tests=0.5 if task.id == "a" else 1.0)

    runner, _ = make_runner(tasks, episode)
    worker_policy = object()
    worker = RolloutWorker(runner, worker_policy, group_size=2, concurrency=1)
    worker.start()
    try:
        worker.update_model_version(3)
        assert worker.submit(tasks) == [1, 2]
        first, second = worker.take_group(30), worker.take_group(30)
    finally:
        worker.stop()
    assert policies and all(p is worker_policy for p in policies)  # never the trainer's
    assert [i.rollout.task_id for i in first + second] == ["a", "a", "b", "b"]
    assert [i.group_id for i in first + second] == [1, 1, 2, 2]
    assert {i.model_version for i in first + second} == {3}
    assert runner.calls == 0  # nothing recorded: that is the consumer's, in its thread
    item = first[0]
    assert item.input_ids == [3, 5, 7] + item.rollout.completion_ids
    assert item.completion_mask == [0, 0, 0] + item.rollout.env_mask
    assert item.old_log_probs == [0.0] * 3 + item.rollout.logprobs


def test_the_worker_streams_a_slow_group_holds_up_only_itself_within_its_slots():
    """Three slots, groups of 2: `slow`'s two episodes take 0.6 s, the rest 0.05 s. The
    fast groups queued after it finish first and leave first; never more than 3 episodes
    run at once; each rollout carries the version its episode started with."""
    tasks = [make_task("slow"), make_task("f1"), make_task("f2")]
    running, peak = 0, 0

    async def episode(task, policy, config, judge):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.6 if task.id == "slow" else 0.05)
        running -= 1
        return scripted_result(task, tests=0.5)

    runner, _ = make_runner(tasks, episode)
    worker = RolloutWorker(runner, object(), group_size=2, concurrency=3)
    worker.start()
    try:
        worker.submit(tasks[:2])
        time.sleep(0.2)  # slow's episodes and f1's first have started, at version 0
        worker.update_model_version(1)
        worker.submit(tasks[2:])
        groups = [worker.take_group(30) for _ in range(3)]
    finally:
        worker.stop()
    assert [g[0].rollout.task_id for g in groups] == ["f1", "f2", "slow"]
    assert peak == 3
    by_task = {g[0].rollout.task_id: [i.model_version for i in g] for g in groups}
    assert by_task["slow"] == [0, 0] and by_task["f2"] == [1, 1]
    assert group_version(groups[0]) == 0  # f1: its first episode started at version 0


def test_a_bug_in_the_workers_rollout_reaches_the_trainer_unmasked():
    tasks = [make_task("a")]

    async def episode(task, policy, config, judge):
        raise ZeroDivisionError("a bug")

    runner, _ = make_runner(tasks, episode)
    worker = RolloutWorker(runner, object(), group_size=2, concurrency=2)
    worker.start()
    worker.submit(tasks)
    with pytest.raises(ZeroDivisionError, match="a bug"):
        worker.take_group(30, poll_s=0.05)
    worker.stop()


def test_a_worker_never_started_idle_or_past_its_time_is_an_error_not_a_hang():
    runner, _ = make_runner([make_task("a")], None)
    worker = RolloutWorker(runner, object(), group_size=2, concurrency=2)
    with pytest.raises(RuntimeError, match="not running"):
        worker.take_group(30, poll_s=0.01)

    worker.start()
    with pytest.raises(RuntimeError, match="none is queued"):
        worker.take_group(30, poll_s=0.01)
    worker.stop()

    async def slow(task, policy, config, judge):
        await asyncio.sleep(3)
        return scripted_result(task, 1.0)

    runner, _ = make_runner([make_task("a")], slow)
    worker = RolloutWorker(runner, object(), group_size=2, concurrency=2)
    worker.start()
    worker.submit([make_task("a")])
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="more than 0s"):
        worker.take_group(stale_after_s=0.2, poll_s=0.05)
    assert time.monotonic() - started < 5
    worker.stop(0)


def test_stopping_drops_queued_episodes_and_lets_running_ones_finish():
    started: list[str] = []
    finished: list[str] = []

    async def episode(task, policy, config, judge):
        started.append(task.id)
        await asyncio.sleep(0.3)
        finished.append(task.id)
        return scripted_result(task, 1.0)

    tasks = [make_task("a"), make_task("b"), make_task("c")]
    runner, _ = make_runner(tasks, episode)
    worker = RolloutWorker(runner, object(), group_size=2, concurrency=2)
    worker.start()
    worker.submit(tasks)
    time.sleep(0.1)
    worker.stop(timeout_s=5)
    assert started == ["a", "a"] and finished == ["a", "a"]  # b and c never started
    assert not worker._thread.is_alive()


def test_the_local_weight_transfer_waits_for_the_generation_call_in_progress():
    model = torch.nn.Linear(2, 2)
    lock = threading.Lock()
    transfer = LocalWeightTransfer(model, lock)
    lock.acquire()  # a generation call is running
    done = threading.Event()

    def push():
        transfer.pause()
        transfer.send_weights([("weight", torch.ones(2, 2)), ("bias", torch.zeros(2))])
        transfer.resume()
        done.set()

    threading.Thread(target=push, daemon=True).start()
    assert not done.wait(0.2) and not torch.equal(model.weight, torch.ones(2, 2))
    lock.release()  # the call ends: the weights go in
    assert done.wait(5) and torch.equal(model.weight, torch.ones(2, 2)) and transfer.sent == 1
    with pytest.raises(KeyError, match="no parameter 'nope'"):
        transfer.send_weights([("nope", torch.ones(1))])


# --- staleness ------------------------------------------------------------------------------


def queued(group: int, *versions: int) -> list[QueuedRollout]:
    rollout = StepRollout.from_result(scripted_result(make_task("a"), 1.0))
    return [QueuedRollout(rollout, group, v) for v in versions]


def test_groups_one_step_behind_are_kept_and_two_behind_are_stale():
    groups = [queued(1, 4, 4), queued(2, 3, 4), queued(3, 5, 5)]
    stale = [g[0].group_id for g in groups if is_stale(g, version=5, max_staleness=1)]
    assert stale == [2]  # its oldest episode is two behind
    fresh = [g[0].group_id for g in groups if not is_stale(g, version=5, max_staleness=0)]
    assert fresh == [3]


# --- the importance weight ---------------------------------------------------------------


def test_importance_weights_are_trls_truncated_ratio_and_one_off_the_mask():
    train = torch.tensor([[-1.0, -1.0, -0.5], [-2.0, -1.0, -3.0]])
    sampled = torch.tensor([[-1.0, -2.0, -0.5], [-1.0, -1.0, float("nan")]])
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    token = importance_weights(train, sampled, mask, "token", cap=2.0)
    expected = torch.tensor([[1.0, 2.0, 1.0], [torch.exp(torch.tensor(-1.0)), 1.0, 1.0]])
    assert torch.allclose(token, expected)  # e^1 capped at 2; unmasked and NaN give 1
    sequence = importance_weights(train, sampled, mask, "sequence", cap=10.0)
    assert sequence.shape == (2, 1)
    assert torch.allclose(sequence.squeeze(1), torch.exp(torch.tensor([1.0, -1.0])))
    stats = ratio_stats(token, mask)
    assert stats["sampling/importance_sampling_ratio/max"] == pytest.approx(2.0)
    assert stats["sampling/importance_sampling_ratio/min"] == pytest.approx(float(expected[1, 0]))


# --- the real TRL trainer, one step ahead ----------------------------------------------------


def sampling_episode(max_new_tokens: int = 6):
    """`run_rollout`'s shape: the policy it is handed samples the completion for real (so its
    log-probs are the generating weights'); reward: the share of even token ids, halved, plus
    0.5 on every other rollout of a task, so no group is flat and every step updates."""
    counts: dict[str, int] = {}

    async def episode(task, policy, config, judge):
        counts[task.id] = counts.get(task.id, 0) + 1
        bonus = 0.5 * (counts[task.id] % 2)
        prompt = [3, 5, 7, 9]
        sample = await policy.sampler.sample(prompt, max_new_tokens)
        ids = sample.ids or [1]
        logprobs = sample.logprobs if sample.ids else [0.0]
        share = bonus + 0.5 * sum(1 for t in ids if t % 2 == 0) / len(ids)
        traj = Trajectory(
            task_id=task.id,
            policy="trainer",
            messages=[],
            termination=Termination.finished,
            prompt_ids=prompt,
            completion_ids=ids,
            env_mask=[1] * len(ids),
            logprobs=logprobs,
        )
        reward = combine({"tests": share, "judge": Missing("none")})
        return RolloutResult(task.id, traj, reward=reward, termination="finished")

    return episode


def async_trainer(
    tmp_path,
    tokenizer,
    model,
    *,
    max_staleness=1,
    steps=3,
    ahead_class=None,
    save_steps=0,
    advantage="grpo",
):
    """An `AsyncSessionTrainer` over a session of scripted-but-sampling rollouts."""
    from tbrl_lib.train.grpo import async_trainer

    tasks = [make_task("a"), make_task("b")]
    config = TrainConfig(
        model={"dtype": "fp32", "gradient_checkpointing": False},
        rollout={"episode": {"max_total_tokens": 256, "max_tokens_per_turn": 16}},
        grpo={
            "async_rollouts": True,
            "max_staleness": max_staleness,
            "num_generations": 2,
            "per_device_batch_size": 2,
            "gradient_accumulation_steps": 2,
            "max_steps": steps,
            "optimizer": "sgd",
            "learning_rate": 0.5,
            "max_grad_norm": 10.0,
            "temperature": 1.0,
            "save_steps": save_steps,
            "advantage": advantage,
        },
        curriculum={"filter_after_groups": 0, "dynamic_sampling": False},
        launch={"gpus_per_node": 0, "generation_backend": "hf", "sandbox_concurrency": 4},
    )
    curriculum = Curriculum({t.id: t.difficulty.value for t in tasks}, 0)
    runner, rollout_func = make_runner(
        tasks, sampling_episode(), curriculum, concurrency=4, trajectories_dir=tmp_path / "traj"
    )
    policy = TrainerPolicy(tokenizer, "hf", 1.0, 1.0, 64)
    runner.settings.policy = policy
    session = SimpleNamespace(
        config=config,
        out=tmp_path,
        tasks=tasks,
        index=rollout_func.index,
        runner=runner,
        rollout_func=rollout_func,
        curriculum=curriculum,
        policy=policy,
        tokenizer=tokenizer,
        model=model,
        peft_config=None,
        rollout=RolloutConfig(),
        dataset=Dataset.from_list(
            [{k: v for k, v in row(t).items() if k != "task"} for t in tasks]
        ),
        callbacks=lambda: [],
        tracked={},  # what callbacks measured this step (none here): SessionTrainer.log merges it
    )
    if ahead_class is not None:
        original = async_trainer.AheadRolloutFunc
        async_trainer.AheadRolloutFunc = ahead_class
        try:
            return async_trainer.AsyncSessionTrainer(session)
        finally:
            async_trainer.AheadRolloutFunc = original
    return async_trainer.AsyncSessionTrainer(session)


def step_logs(trainer) -> list[dict]:
    return [h for h in trainer.state.log_history if "async/staleness_mean" in h]


@pytest.mark.slow
def test_one_step_ahead_trains_on_batches_one_version_old_with_the_ratio_logged(
    tmp_path, tiny_tokenizer, tiny_model
):
    trainer = async_trainer(tmp_path, tiny_tokenizer, tiny_model)
    trainer.train()
    logs = step_logs(trainer)
    assert len(logs) == 3
    assert [h["async/staleness_max"] for h in logs] == [0.0, 1.0, 1.0]
    assert all(h["async/stale_dropped_rollouts"] == 0 for h in logs)
    first, later = logs[0], logs[1:]
    # step 0 trains on its own weights' samples: ratio 1 up to float noise (the same
    # distribution, computed once by generate() and once by TRL's forward)
    assert first["sampling/importance_sampling_ratio/mean"] == pytest.approx(1.0, abs=1e-3)
    # later batches are labelled one version old; their ratio is logged, and it is off 1
    # only for the tokens the worker sampled before the trainer's push. When the worker is
    # slower than the trainer (the full suite, 2 loaded cores) it samples a batch after the
    # push and the ratio is exactly 1, as it should be: the log-probs are the sampling
    # weights' own. Which happens is timing, so only a finite positive ratio holds here; the weights
    # themselves are tested in importance_weights' tests.
    for h in later:
        low, high = (h[f"sampling/importance_sampling_ratio/{k}"] for k in ("min", "max"))
        assert 0 < low <= high < float("inf")
    ahead = trainer.ahead
    assert ahead.transfer.sent == 3  # one weight transfer per step
    assert ahead.versions == [1] * 4  # the last batch: queued at step 1, after its push
    assert not ahead.worker._thread.is_alive()  # stopped when training ended
    assert trainer.session.runner.calls == 3
    assert len(list((tmp_path / "traj").glob("*.jsonl"))) == 3


@pytest.mark.slow
def test_the_async_trainer_calls_the_runs_advantage_estimator(
    tmp_path, tiny_tokenizer, tiny_model, monkeypatch
):
    """The asynchronous trainer is the synchronous one underneath: the estimator
    `grpo.advantage` names turns each step's rewards into its advantages, once per step."""
    from tbrl_lib.train.config.estimators import ESTIMATORS, Estimator, rloo

    calls = []

    def probe(rewards, settings):
        calls.append(tuple(rewards.shape))
        return rloo(rewards, settings)

    monkeypatch.setitem(ESTIMATORS, "probe", Estimator(probe, scaled=False))
    trainer = async_trainer(tmp_path, tiny_tokenizer, tiny_model, steps=2, advantage="probe")
    trainer.train()
    assert calls == [(2, 2), (2, 2)]  # each step: 2 groups of 2 rollouts
    assert all("advantages/abs_mean" in h for h in step_logs(trainer))


class LaggingAhead(AheadRolloutFunc):
    """Skips the weight transfer at odd steps, so the worker falls two versions behind."""

    def _sync(self, trainer, version):
        if version % 2 == 1:
            return
        super()._sync(trainer, version)


@pytest.mark.slow
def test_samples_two_versions_behind_are_dropped_counted_and_regenerated(
    tmp_path, tiny_tokenizer, tiny_model
):
    trainer = async_trainer(tmp_path, tiny_tokenizer, tiny_model, ahead_class=LaggingAhead)
    trainer.train()
    logs = step_logs(trainer)
    # step 1 takes what step 0 queued, version 0 (one behind: kept); the worker, not updated
    # at step 1, generates what step 1 queued with version 0 too: two behind at step 2,
    # dropped (4 rollouts), queued again and generated with version 2's weights
    assert [h["async/staleness_max"] for h in logs] == [0.0, 1.0, 0.0]
    assert [h["async/stale_dropped_rollouts"] for h in logs] == [0.0, 0.0, 4.0]
    assert all("sampling/importance_sampling_ratio/mean" in h for h in logs)


@pytest.mark.slow
def test_max_staleness_zero_makes_every_step_synchronous(tmp_path, tiny_tokenizer, tiny_model):
    trainer = async_trainer(tmp_path, tiny_tokenizer, tiny_model, max_staleness=0, steps=2)
    trainer.train()
    logs = step_logs(trainer)
    assert [h["async/staleness_max"] for h in logs] == [0.0, 0.0]
    assert [h["async/stale_dropped_rollouts"] for h in logs] == [0.0, 4.0]


@pytest.mark.slow
def test_a_resumed_async_run_drops_the_queue_and_keeps_the_version_and_curriculum(
    tmp_path, tiny_tokenizer
):
    first = async_trainer(tmp_path, tiny_tokenizer, make_model(), steps=2, save_steps=1)
    first.train()
    checkpoint = tmp_path / "checkpoints" / "checkpoint-2"
    second = async_trainer(tmp_path, tiny_tokenizer, make_model(seed=1), steps=3, save_steps=1)
    second.restore(checkpoint)
    assert second.session.curriculum.state_dict() == first.session.curriculum.state_dict()
    second.train(resume_from_checkpoint=str(checkpoint))
    resumed = [h for h in step_logs(second) if h["step"] == 3]
    # nothing was ahead after the resume: step 3 generated its batch itself, with the
    # checkpoint's weights, whose version is the checkpoint's step
    assert [h["async/staleness_max"] for h in resumed] == [0.0]
    assert second.ahead.versions == [2] * 4
    assert second.session.runner.calls == 3  # the trajectory files continue


# --- the pipeline's choices at take time -------------------------------------------------


def test_a_flat_group_is_set_aside_and_replaced_by_a_task_the_curriculum_draws():
    """Dynamic sampling on a stream: `flat`'s rollouts all score 1.0, so its group is set
    aside (saved and counted as dropped, not trained on) and a group of a task outside the
    batch and the queue, drawn by the curriculum, is queued in its place."""
    tasks = [make_task("flat"), make_task("a"), make_task("spare")]
    counts: dict[str, int] = {}

    async def episode(task, policy, config, judge):
        counts[task.id] = counts.get(task.id, 0) + 1
        tests = 1.0 if task.id == "flat" else 0.5 * (counts[task.id] % 2)
        await asyncio.sleep(0.01)
        return scripted_result(task, tests=tests)

    curriculum = Curriculum({t.id: t.difficulty.value for t in tasks}, 0)
    runner, rollout_func = make_runner(tasks, episode, curriculum)
    ahead = AheadRolloutFunc(
        rollout_func.index, runner, object(), group_size=2, max_staleness=1,
        stale_after_s=30, concurrency=2, refill_rounds=1,
    )  # fmt: skip
    ahead.worker.policy = object()
    ahead.worker.start()
    try:
        ahead.worker.submit(tasks[:2])
        taken, generated = ahead._take(2, step=0)
    finally:
        ahead.worker.stop()
    assert sorted(g[0].rollout.task_id for g in taken) == ["a", "spare"]
    assert generated.draws == ["spare"]
    assert [r.task_id for r in generated.dropped] == ["flat", "flat"]
    assert all(r.dropped for r in generated.dropped)
    assert generated.sampling["sampling/refilled_groups"] == 1.0
    assert generated.sampling["sampling/zero_std_groups"] == pytest.approx(1 / 3)
    assert generated.sampling["sampling/zero_std_after"] == 0.0
    done = runner.record(generated, 0)  # the curriculum counts the flat group too
    assert len(done.rollouts) == 4 and curriculum.state_dict()["refills"] == {"spare": 1}
