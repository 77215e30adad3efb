"""The policy model: its loader, the trainer-side policy, and a CPU log-prob head for TRL."""
