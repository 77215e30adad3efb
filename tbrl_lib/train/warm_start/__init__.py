"""Around GRPO: oracle demonstrations, the SFT warm start, and held-out evaluation."""
