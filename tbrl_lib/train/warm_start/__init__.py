"""Before GRPO: oracle demonstrations and the SFT warm start on them (the held-out
evaluation that measures it is `train/heldout/`)."""
