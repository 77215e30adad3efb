"""The spine of a run: the session, the TRL trainers, its tasks, preflight, `train()`, summary."""
