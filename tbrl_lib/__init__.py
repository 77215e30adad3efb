"""tbrl: train long-horizon terminal agents with RL."""
__version__ = "0.1.0"
