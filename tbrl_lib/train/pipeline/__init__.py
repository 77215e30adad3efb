"""Async GRPO: rollouts streamed about one step ahead of training, and their worker."""
