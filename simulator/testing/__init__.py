"""Test helpers that ship with the package, for rescue-sim's own tests and benchmarks and for users' tests:
a local OpenAI-compatible fake server (`simulator.testing.fake_openai`)."""

from simulator.testing.fake_openai import FakeOpenAIServer, FaultRates, instance_for_schema, spawn_server

__all__ = ["FakeOpenAIServer", "FaultRates", "instance_for_schema", "spawn_server"]
