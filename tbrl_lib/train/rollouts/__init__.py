"""A step's rollouts: curriculum, dynamic sampling, the runner, its records and guards."""
