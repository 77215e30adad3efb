"""One rollout, one reward: `run_rollout(task, policy, config, judge) -> RolloutResult`.

The layer above `agent`, `sandbox` and `rewards` that training (`tbrl_lib.train`),
evaluation and validation (`tbrl_lib.evaluate`), `tbrl agent run` and judge-case recording
(`tbrl_lib.judge_eval.record`) share. Its face also hands on what one rollout is made of and
looked at with (notebook 02): `load_tasks`, `open_sandbox`, `make_policy`, `make_judge`, and
the trajectory's page (`trajectory_html`, `write_trajectory_page`) and live viewer.
"""

from tbrl_lib.models import make_policy
from tbrl_lib.rewards.judges import make_judge
from tbrl_lib.rollout.config import GRACE_SECONDS, RolloutConfig
from tbrl_lib.rollout.rollout import AGENT_TIMEOUT, RolloutResult, run_rollout
from tbrl_lib.sandbox import open_sandbox
from tbrl_lib.tasks import load_tasks
from tbrl_lib.viewers.live import live_viewer
from tbrl_lib.viewers.trajectory_html import trajectory_html, write_trajectory_page

__all__ = [
    "AGENT_TIMEOUT",
    "GRACE_SECONDS",
    "RolloutConfig",
    "RolloutResult",
    "live_viewer",
    "load_tasks",
    "make_judge",
    "make_policy",
    "open_sandbox",
    "run_rollout",
    "trajectory_html",
    "write_trajectory_page",
]
