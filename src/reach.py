"""Where the terminal verbs (``add``, ``search``, ``import``...) send their requests.

Every verb speaks the REST API through the Python client, so it goes through the same doors
and the same write choke point as any client. The server it speaks to is, in order:

1. ``--url`` or ``$MNEMOLOG_URL``, when given;
2. the server running on the data dir (its address is in ``serving.json``);
3. else the data dir opened here, in this process, served for as long as the command runs on
   a Unix socket of mode 0600 in a fresh directory of mode 0700, so no other local user can
   connect to it, whatever the data dir's own mode. Opening it takes the data dir's lock, so
   no server may start meanwhile.

With keys live, every way needs a key in ``$MNEMOLOG_API_KEY``, as any client does.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import msgspec

from .client import Client
from .serving import read_address
from .settings import Settings

__all__ = ["reach", "served_here"]

SOCKET = "cli.sock"  # in a private directory, while a command serves the data dir in process
_START_SECONDS = 120  # a first start may distil the embedder


@contextmanager
def reach(settings: Settings, url: str | None, *, timeout: float = 300.0) -> Iterator[Client]:
    """A client of the server a verb speaks to (see the module's docstring)."""
    address = url or os.environ.get("MNEMOLOG_URL") or read_address(settings.data_dir)
    if address:
        with Client(address, timeout=timeout) as client:
            yield client
        return
    with served_here(settings) as socket_path:
        transport = httpx.HTTPTransport(uds=str(socket_path))
        # The Host the door expects of this server (its configured port): nothing listens
        # there, the socket carries the request.
        here = f"http://localhost:{settings.port}"
        with Client(here, timeout=timeout, transport=transport) as client:
            yield client


@contextmanager
def served_here(settings: Settings) -> Iterator[Path]:
    """The data dir opened and served on a private Unix socket until the block ends."""
    import uvicorn

    from .api import create_app
    from .runtime import Runtime

    os.umask(0o077)  # everything written under the data dir is private
    quiet = msgspec.structs.replace(settings, access_log=False)  # not on the terminal
    runtime = Runtime(quiet)
    # A fresh directory of mode 0700 that no one else could have made first, with a path
    # short enough for a socket's address (a data dir's may not be).
    with (
        contextlib.closing(runtime),
        tempfile.TemporaryDirectory(prefix="mnemolog-") as private,
        _private_socket(Path(private) / SOCKET) as listener,
    ):
        config = uvicorn.Config(create_app(runtime), log_level="warning", access_log=False)
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run,
            kwargs={"sockets": [listener]},
            name="mnemolog-cli-server",
            daemon=True,
        )
        thread.start()
        try:
            deadline = time.monotonic() + _START_SECONDS
            while not server.started:
                if not thread.is_alive() or time.monotonic() > deadline:
                    raise RuntimeError(f"could not serve {quiet.data_dir} in this process")
                time.sleep(0.01)
            yield Path(private) / SOCKET
        finally:
            server.should_exit = True
            thread.join(timeout=30)


def _private_socket(path: Path) -> socket.socket:
    """A Unix socket bound at ``path`` that only this user may connect to. Bound here, not by
    uvicorn, which makes its socket 0666: the umask of 077 set above makes the file 0700 as
    it is created, and it is 0600 before anything listens on it."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))
        os.chmod(path, 0o600)
    except OSError:
        listener.close()
        raise
    return listener
