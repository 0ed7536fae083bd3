"""The tokenizer files other libraries fetch at run time, shipped with rescue-sim so that nothing is fetched.

tiktoken downloads an encoding's BPE file from openaipublic.blob.core.windows.net the first time a process asks
for it, unless the file is already in its cache folder (`TIKTOKEN_CACHE_DIR`, keyed by the sha1 of the file's
URL, checked against the sha256 tiktoken pins). Two libraries ask during a session:

- Inspect AI counts tokens with `o200k_base` wherever a provider does not report usage, its test model
  `mockllm/model` on every call (and the openai provider's `count_tokens` with the model's encoding);
- litellm loads `cl100k_base` when it is imported, and on import points `TIKTOKEN_CACHE_DIR` at its own bundled
  folder (older releases bundle only `cl100k_base` there) unless `CUSTOM_TIKTOKEN_CACHE_DIR` is set.

`SHIPPED` holds both files (copied byte for byte from tiktoken's URLs; their sha256 are tiktoken's own pins, and
tests/test_offline.py checks them). `use_shipped_tokenizers()` points both variables at that folder, so tiktoken
reads it whichever library loads an encoding first, in whichever order they are imported. It is called where a
process enters rescue-sim (the CLI's `main`, the Inspect tasks, the litellm client before it imports litellm),
never at import time. A folder the user named in either variable is kept: they chose where tiktoken reads.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

__all__ = ["ENCODINGS", "SHIPPED", "cache_key", "common_words", "use_shipped_tokenizers"]

SHIPPED = Path(__file__).resolve().parent / "tiktoken"
# encoding -> the URL tiktoken reads it from and the sha256 it pins (tiktoken_ext/openai_public.py)
ENCODINGS = {
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}


def cache_key(url: str) -> str:
    """The file name tiktoken looks for in its cache folder: the sha1 of the URL (tiktoken.load.read_file_cached)."""
    return hashlib.sha1(url.encode()).hexdigest()


def use_shipped_tokenizers() -> Path:
    """Point tiktoken (and litellm's copy of the setting) at the shipped files; returns the folder tiktoken reads.

    Sets `TIKTOKEN_CACHE_DIR` and `CUSTOM_TIKTOKEN_CACHE_DIR` where neither is set; where the user set one, the
    other follows it (litellm would otherwise replace `TIKTOKEN_CACHE_DIR` with its own folder on import)."""
    chosen = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("CUSTOM_TIKTOKEN_CACHE_DIR") or str(SHIPPED)
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", chosen)
    os.environ.setdefault("CUSTOM_TIKTOKEN_CACHE_DIR", chosen)
    return Path(os.environ["TIKTOKEN_CACHE_DIR"])


@functools.lru_cache(maxsize=4)
def common_words(first: int) -> frozenset[str]:
    """English's most frequent words, offline: the lower-case words that are whole tokens (with their leading
    space) among the first `first` tokens of the shipped `cl100k_base`. A BPE vocabulary is learned merge by merge
    in order of frequency, so a low rank means a frequent word ("true" 837, "especially" 5423; "mortgage" 21515,
    "naloxone" three tokens)."""
    import base64

    path = SHIPPED / cache_key(ENCODINGS["cl100k_base"][0])
    out: set[str] = set()
    for line in path.read_bytes().splitlines():
        token, rank = line.split()
        if int(rank) >= first:
            continue
        text = base64.b64decode(token)
        if text[:1] == b" " and text[1:].isalpha() and text[1:].islower():
            out.add(text[1:].decode("ascii", "ignore"))
    return frozenset(out)
