"""Who writes the assistant turns, when a model does: the `Policy` seam (`base.py`), the one
token-exact renderer (`chat.py`), local HF models (`hf.py`) behind a batching front
(`batching.py`), API models (`api.py`), and the tiny Qwen3 builder (`tiny_model.py`).

Left out on purpose: the policies that need no model (`oracle`, `noop`, scripted replies)
write the agent's action language and live above it (`tbrl_lib.agent.scripted`), as does
`make_policy(spec)`, which picks any of them (`tbrl_lib.models.policy_spec`).
"""

from tbrl_lib.policies.base import ContextOverflow, Conversation, Generation, Policy, PolicyError

__all__ = ["ContextOverflow", "Conversation", "Generation", "Policy", "PolicyError"]
