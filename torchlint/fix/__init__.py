"""Fixes: resolving a rule's node edits to text edits, applying them to a fixed point, diffs."""
