"""Configuration: the run's config composed of its owners' sections (run.py), the declaration of an option
(options.py), and where each artifact lives, derived from the config alone (paths.py)."""
