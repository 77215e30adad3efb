"""tbrl_lib.viewers: trajectories for people, a live-kernel widget and a static HTML page."""
