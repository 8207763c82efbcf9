"""The command classifier and its parsers: is a shell line proven read-only, read as bash reads it."""
