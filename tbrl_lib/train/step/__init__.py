"""A step's rollouts: the runner and its records, its hooks (the infra-rate stop, dynamic
sampling, the gather across processes, engine outages), and the curriculum."""
