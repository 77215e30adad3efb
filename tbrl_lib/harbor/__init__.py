"""tbrl inside Harbor, Terminal-Bench 2's harness: the agent Harbor imports
(`agent.TbrlAgent`, Python >= 3.12 with the `harbor` extra; nothing of tbrl imports it), the
sandbox it drives (`environment.py`), the image Harbor runs in here (`image.py`), the run
behind `tbrl eval harbor` (`run.py`) and the reader of Harbor's job folders (`job.py`).

It sits above `evaluate`: the reader writes evaluation's `results.json` with its rules.
This file imports nothing, so `import tbrl_lib.harbor.agent` inside Harbor's image pulls
in only the agent's own imports (no pandas, no torch).
"""

TRAJECTORY_FILE = "tbrl-trajectory.json"
"""tbrl's trajectory of a Harbor trial, in the trial's agent log folder."""
