"""vLLM beside the trainer: the server a run starts, vLLM on a CPU, the weight-sync probe."""
