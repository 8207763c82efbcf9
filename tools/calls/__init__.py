"""One call's life: the entry record, calling the handler, its outcome, results and result values, call hooks
and examples."""
