"""A child process with the network unreachable: every connection and name lookup beyond loopback fails, and each
attempt is written to a log the test reads back.

`offline_env(tmp_path)` returns the environment for `subprocess.run`: a `sitecustomize.py` on PYTHONPATH (Python
imports it at start-up in the child and in every Python process the child starts) wraps `socket.getaddrinfo` and
`socket.socket.connect`/`connect_ex`, so requests, urllib3, aiohttp and httpx all fail as on a machine without a
network. HOME and TMPDIR are fresh folders and no tiktoken cache is set, so nothing a previous online run left
behind (tiktoken's `/tmp/data-gym-cache`, `~/.cache`) can stand in for what rescue-sim must ship.
"""

from __future__ import annotations

import os
from pathlib import Path

GUARD = """
import ipaddress, os, socket

_LOG = os.environ["RESCUE_SIM_TEST_NET_LOG"]


def _loopback(host):
    if host is None or host in ("localhost", b"localhost"):
        return True
    try:
        return ipaddress.ip_address(host.decode() if isinstance(host, bytes) else host).is_loopback
    except ValueError:
        return False


def _refuse(what):
    with open(_LOG, "a", encoding="utf-8") as f:
        f.write(what + "\\n")


_getaddrinfo = socket.getaddrinfo


def getaddrinfo(host, *args, **kwargs):
    if not _loopback(host):
        _refuse(f"getaddrinfo {host}")
        raise socket.gaierror(socket.EAI_NONAME, f"network unreachable (test guard): {host}")
    return _getaddrinfo(host, *args, **kwargs)


def _guarded(method):
    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
            _refuse(f"connect {address[0]}:{address[1]}")
            raise OSError(101, f"network unreachable (test guard): {address[0]}")
        return method(self, address)

    return connect


socket.getaddrinfo = getaddrinfo
socket.socket.connect = _guarded(socket.socket.connect)
socket.socket.connect_ex = _guarded(socket.socket.connect_ex)
"""

CLEARED = ("TIKTOKEN_CACHE_DIR", "CUSTOM_TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR", "HF_HOME", "XDG_CACHE_HOME")


def offline_env(tmp_path: Path, **extra: str) -> tuple[dict[str, str], Path]:
    """The child's environment and the file that lists every refused network attempt (absent when none)."""
    guard = tmp_path / "netguard"
    guard.mkdir(exist_ok=True)
    (guard / "sitecustomize.py").write_text(GUARD, encoding="utf-8")
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir(exist_ok=True)
    tmp.mkdir(exist_ok=True)
    log = tmp_path / "refused.log"
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    repo = str(Path(__file__).resolve().parents[1])
    env.update(
        PYTHONPATH=os.pathsep.join([str(guard), repo]),
        RESCUE_SIM_TEST_NET_LOG=str(log),
        HOME=str(home),
        TMPDIR=str(tmp),
        RESCUE_SIM_HOME=str(tmp_path / "rescue-sim-home"),
        NO_COLOR="1",
        COLUMNS="100",
        **extra,
    )
    return env, log


def refused(log: Path) -> list[str]:
    """The network attempts the guard refused, in order."""
    return log.read_text(encoding="utf-8").splitlines() if log.is_file() else []
