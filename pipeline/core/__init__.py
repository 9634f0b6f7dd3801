"""What the pipeline is made of: stages and the runner that orders them, artifacts and the files that hold them,
typed records, per-item caches, model sources and registries, and the store that writes everything atomically."""
