"""Held-out instances and their evaluation before, during and after GRPO: the split by
content (`split.py`: which instances train and which are held out), the run's evaluator and
its TRL callback, and the before/after tables (`evaluator.py`)."""
