"""One rollout, one reward: `run_rollout(task, policy, config, judge) -> RolloutResult`.

The layer above `agent`, `sandbox` and `rewards` that training (`tbrl_lib.train`),
evaluation and validation (`tbrl_lib.evaluate`), `tbrl agent run` and judge-case recording
(`tbrl_lib.judge_eval.record`) share.
"""

from tbrl_lib.rollout.config import GRACE_SECONDS, RolloutConfig
from tbrl_lib.rollout.result import RolloutResult
from tbrl_lib.rollout.run import AGENT_TIMEOUT, run_rollout

__all__ = ["AGENT_TIMEOUT", "GRACE_SECONDS", "RolloutConfig", "RolloutResult", "run_rollout"]
