"""Batches of tool calls: the plan (what may share time), the records, the running state, scope, the scheduler."""
