"""Front doors into other harnesses. Optional: each module here imports its harness, and nothing in the core
imports this package (see tests/test_inspect_task.py). `inspect_task`: the Inspect AI tasks `rescue_session` and
`rescue_stress`, with `inspect_client` (Inspect models behind the project's ModelClient) and `inspect_log`
(an Inspect log of these tasks turned back into a run folder)."""
