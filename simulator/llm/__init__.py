"""Model access: one client over litellm (plus the embedded offline model), a fake for tests, prompt profiles."""

from simulator.llm.fake import FakeCall, FakeModelClient
from simulator.llm.types import CallRecord, Completion, ModelClient, ModelConfigError, ModelError, Prompt, Usage

__all__ = [
    "CallRecord",
    "Completion",
    "FakeCall",
    "FakeModelClient",
    "ModelClient",
    "ModelConfigError",
    "ModelError",
    "Prompt",
    "Usage",
]
