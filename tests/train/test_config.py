"""One name and one default per concept: the training config is made of the lower layers' own
configs, and no setting name appears in two of its sections (evaluation's `RunConfig` nests
the same episode and reward configs, so it cannot disagree either)."""

from __future__ import annotations

from collections import defaultdict

from tbrl_lib.agent.config import EpisodeLimits
from tbrl_lib.evaluate.results import RunConfig
from tbrl_lib.overrides import settings_reference
from tbrl_lib.rewards.reward import RewardConfig
from tbrl_lib.rollout.config import RolloutConfig
from tbrl_lib.sandbox.config import SandboxConfig
from tbrl_lib.train.config import TrainConfig

SAME_NAME_ON_PURPOSE = {
    "learning_rate": "the warm start (sft) and GRPO (grpo) are two optimisations of one run",
}
"""Setting names allowed in two sections, each with why it is not one concept twice."""


def test_no_setting_name_is_in_two_sections():
    places: dict[str, list[str]] = defaultdict(list)
    for key, _, _ in settings_reference(TrainConfig):
        places[key.rsplit(".", 1)[-1]].append(key)
    twice = {
        name: keys
        for name, keys in places.items()
        if len(keys) > 1 and name not in SAME_NAME_ON_PURPOSE
    }
    assert not twice, f"one concept, one name: {twice}"
    assert len(places) > 80  # every section was listed (model .. launch, episode .. tools)


def test_the_rollout_section_is_the_config_evaluation_runs_with():
    assert TrainConfig.model_fields["rollout"].annotation is RolloutConfig
    assert RunConfig.model_fields["episode"].annotation is EpisodeLimits
    assert RunConfig.model_fields["reward"].annotation is RewardConfig
    # so a default of the episode, sandbox or reward is one default for both
    assert TrainConfig().rollout.episode == RunConfig(policy="oracle").episode
    assert TrainConfig().rollout.reward == RunConfig(policy="oracle").reward
    assert TrainConfig().rollout.sandbox == SandboxConfig()


def test_every_setting_is_documented_where_tbrl_train_settings_shows_it():
    undocumented = [key for key, _, doc in settings_reference(TrainConfig) if not doc]
    assert not undocumented


def test_an_old_eval_results_file_reads_its_judge_into_the_reward():
    old = RunConfig.model_validate({"policy": "oracle", "judge": "none", "reward": {"w_judge": 0}})
    assert old.reward.judge == "none" and old.reward.w_judge == 0
