"""Disk cache of model calls, keyed by everything that changes the answer (model, messages, params, seed, trial)."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any


class CallCache:
    """A small SQLite key-value store; safe across threads and processes (SQLite's own locking)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL: a commit survives a killed process (only an OS crash can lose the last ones) and costs no
        # fsync, which would otherwise stall every session sharing the event loop on each cached call
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self._db.commit()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM calls WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO calls (key, value) VALUES (?, ?)", (key, json.dumps(value)))
            self._db.commit()

    def delete(self, key: str) -> None:
        """Forget an answer that turned out unusable (a call that failed outright), so a rerun asks again."""
        with self._lock:
            self._db.execute("DELETE FROM calls WHERE key = ?", (key,))
            self._db.commit()
