"""What rule authors read: syntax-tree helpers, ``FileContext`` (what names mean, where the
walk is), bindings and data flow, torch facts and tensor facts.

Nothing here imports from the engine, the fixer, the runner or the integrations."""
