"""tbrl: train long-horizon terminal agents with RL."""

from pathlib import Path

__version__ = "0.1.0"
REPO_ROOT = Path(__file__).resolve().parents[1]
"""The checkout this package runs from (an editable install); data/, notebooks/, outputs/."""
