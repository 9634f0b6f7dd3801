"""What every layer shares: typed records and their one CSV codec, the declaration of a config option, the files
of an artifact (tables), model sources and registries, file names from outside names, the versions a run records,
Japanese as pronounced, and the store that writes everything atomically. The stages and the runner that orders
them are pipeline/run/."""
