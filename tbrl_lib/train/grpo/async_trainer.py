"""`AsyncSessionTrainer`: the synchronous trainer over streaming rollouts (`grpo.async_rollouts`).

The session's `rollout_func` becomes an `AheadRolloutFunc` (`async_pipeline.py`) over the
session's own runner, index and curriculum, with a second `TrainerPolicy` for the worker's
copy of the weights. After TRL has scored a batch and `SessionTrainer` has put the run's
estimator's advantages in it (`grpo.advantage`: one estimator for both trainers),
`_generate_and_score_completions` weighs it by the importance ratio of the training policy over the one that sampled it
(`async_pipeline.importance_weights`, TRL's truncated IS with `grpo.vllm_is_level` and
`grpo.vllm_is_cap`): one no-grad forward gives the training policy's log-probs, the batch
carries the sampler's. TRL multiplies the per-token loss by that ratio on its vLLM path only,
so here it multiplies the advantages, token by token: for the clipped losses this trainer
allows (`grpo`, `dr_grpo`, `dapo`, `bnpo`), `-min(c*A*w, clip(c)*A*w) = w * -min(c*A, clip(c)*A)`
for any weight w > 0, which is the same loss. The ratio's min/mean/max go into the step's
metrics under TRL's names, `sampling/importance_sampling_ratio/*`. With a vLLM server
generating, TRL applies that same correction itself (`vllm_importance_sampling_correction`,
switched by `grpo.async_is_correction`), so this trainer leaves it to TRL.
"""

from __future__ import annotations

from typing import Any

import torch

from tbrl_lib.train.grpo.session import TrainingSession
from tbrl_lib.train.grpo.trainer import SessionTrainer
from tbrl_lib.train.model.trainer_policy import TrainerPolicy
from tbrl_lib.train.pipeline.async_pipeline import AheadRolloutFunc, importance_weights, ratio_stats
from tbrl_lib.train.step.runner import OUTAGE_RERUNS


def worker_stale_after_s(session: TrainingSession) -> float:
    """Longest one worker episode may take: its time limit, once more per rerun after an
    engine outage, plus the outage wait and a margin; an episode without a time limit counts
    as an hour."""
    per_episode = session.rollout.episode.time_limit_s or 3600.0
    wait = session.rollout.sandbox.engine_wait_s
    return per_episode * (1 + OUTAGE_RERUNS) + wait + 300.0


class AsyncSessionTrainer(SessionTrainer):
    """`SessionTrainer` over an `AheadRolloutFunc` (see the module docstring)."""

    def __init__(self, session: TrainingSession) -> None:
        config = session.config
        policy = session.policy
        worker_policy = TrainerPolicy(
            session.tokenizer,
            config.launch.generation_backend,
            policy.temperature,
            policy.top_p,
            session.rollout.episode.max_total_tokens,
            config.model.enable_thinking,
            policy.max_batch_tokens,
        )
        self.ahead = AheadRolloutFunc(
            session.index,
            session.runner,
            worker_policy,
            config.grpo.num_generations,
            config.grpo.max_staleness,
            worker_stale_after_s(session),
            config.launch.sandbox_concurrency,
            config.curriculum.refill_rounds if config.curriculum.dynamic_sampling else 0,
        )
        session.rollout_func = self.ahead
        super().__init__(session)

    def train(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().train(*args, **kwargs)
        finally:
            self.ahead.close()

    def _generate(self, prompts: list) -> Any:
        # The pipeline pushes the weights to the vLLM server itself, once per step, at the start
        # of its call (`AheadRolloutFunc._sync`); TRL would push them again just before that
        # call (it does when its last loaded step differs from the current one).
        if hasattr(self, "_last_loaded_step"):
            self._last_loaded_step = self.state.global_step
        return super()._generate(prompts)

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        output = super()._generate_and_score_completions(inputs)
        grpo = self.session.config.grpo
        sampling = output.get("sampling_per_token_logps")
        if self.use_vllm:  # TRL corrects on its vLLM path itself (`vllm_importance_sampling_*`)
            return output
        if not (self.model.training and grpo.async_is_correction and sampling is not None):
            return output
        prompt, completion = output["prompt_ids"], output["completion_ids"]
        mask = output["completion_mask"] * output.get("tool_mask", 1)
        with torch.no_grad():
            train_logps, _ = self._get_per_token_logps_and_entropies(
                self.model,
                torch.cat([prompt, completion], dim=1),
                torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1),
                completion.size(1),
                batch_size=self.args.per_device_train_batch_size,
            )[:2]
        ratio = importance_weights(
            train_logps, sampling, mask, grpo.vllm_is_level, grpo.vllm_is_cap
        )
        output["advantages"] = output["advantages"].unsqueeze(1) * ratio
        for name, value in ratio_stats(ratio, mask).items():
            self._metrics["train"][name].append(value)
        return output
