"""What ``torchlint`` runs: the ``check`` command (options, the run, what it prints and its
exit status) and the commands that list and explain rules."""
