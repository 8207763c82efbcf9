"""What the approval gate builds on: per-program command rules and making hidden characters visible."""
