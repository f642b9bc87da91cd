"""Where a running server can be reached, recorded in its data dir: a command that finds the
data dir held by a server (``mnemolog erase``) asks that server instead of opening it.

``<data-dir>/serving.json`` holds ``{"url", "pid"}``: written when ``mnemolog serve`` has the
data dir, removed when it stops. One a killed server left behind names a process that is gone,
and reads as no server.
"""

from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path

import msgspec

FILE = "serving.json"
# A server bound to every address is reached on loopback.
_ANY = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


class Serving(msgspec.Struct, frozen=True):
    url: str
    pid: int


def base_url(host: str, port: int) -> str:
    """The URL a client on this machine reaches a server bound to ``host``:``port`` at."""
    host = _ANY.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def write_address(data_dir: Path, host: str, port: int) -> None:
    path = data_dir / FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(msgspec.json.encode(Serving(url=base_url(host, port), pid=os.getpid())))
    tmp.chmod(0o600)
    tmp.replace(path)


def remove_address(data_dir: Path) -> None:
    """Remove the address this process recorded (another's is left alone)."""
    path = data_dir / FILE
    try:
        serving = msgspec.json.decode(path.read_bytes(), type=Serving)
    except (OSError, msgspec.DecodeError):
        return
    if serving.pid == os.getpid():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def read_address(data_dir: Path) -> str | None:
    """The URL of the server running on ``data_dir``, if one recorded it and is alive."""
    try:
        serving = msgspec.json.decode((data_dir / FILE).read_bytes(), type=Serving)
    except (OSError, msgspec.DecodeError):
        return None
    try:
        os.kill(serving.pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's
    return serving.url


def port_taken(host: str, port: int) -> str | None:
    """Why ``host``:``port`` cannot be listened on (another process holds it, say), or None.
    Bound with ``SO_REUSEADDR`` as uvicorn binds, so a port left in TIME_WAIT reads as free."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None
