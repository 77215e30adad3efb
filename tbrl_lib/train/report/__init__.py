"""What a run writes and shows of itself: metrics, checkpoint state, progress, its report."""
