"""rescue-sim test suite (a package, so `tests.*` never resolves to a stray top-level `tests` that some
PyPI packages install, e.g. ppi-python)."""
