"""What the model writes: the one landing policy, the lander, checkpoints, the ledger and the import guard."""
