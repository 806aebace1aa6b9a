"""Running over many files: one file's pipeline (read, lint, fix, write), notebooks, the
result cache, worker processes and progress."""
