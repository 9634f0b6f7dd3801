"""Configuration: the run's config composed of its owners' sections (run.py), the published recipes a run can
follow (recipes.py), and where each artifact lives, derived from the config alone (paths.py). An option is declared
where it is used, with `option()` (pipeline/core/options.py)."""
