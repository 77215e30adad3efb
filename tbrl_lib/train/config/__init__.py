"""The settings of a run: `TrainConfig`, its sections, and the presets (`presets/*.yaml`)."""
