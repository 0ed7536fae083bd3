"""Keep secrets out of everything rescue-sim writes: transcripts, manifests, reports, logs, error lines."""

from __future__ import annotations

import os
import re

REDACTED = "[redacted]"
_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}"), REDACTED),  # OpenAI/Anthropic-style keys
    (re.compile(r"\bBearer\s+[A-Za-z0-9._\-]{8,}", re.IGNORECASE), f"Bearer {REDACTED}"),
    (re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"), REDACTED),  # user:password@ in URLs
    (re.compile(r"(?i)\b(api[_-]?key|token|secret|password)=[^&\s]+"), rf"\1={REDACTED}"),
)


def redact(text: str) -> str:
    """`text` with API keys from the environment and key-shaped strings replaced by `[redacted]`."""
    for name, value in os.environ.items():
        if value and len(value) >= 8 and _SECRET_ENV.search(name) and value in text:
            text = text.replace(value, REDACTED)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text
