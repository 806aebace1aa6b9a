"""Settings: where they come from (configuration files, the command line) and which files a run looks at."""
