"""Training logs: the checkpoints.jsonl records a tinker-cookbook run writes, and its log dirs."""
