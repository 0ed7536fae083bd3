"""How a session unfolds: run records, model access, the LangGraph engine, supporters, the runner and the CLI."""
