"""Where the terminal verbs (``add``, ``search``, ``import``...) send their requests.

Every verb speaks the REST API through the Python client, so it goes through the same doors
and the same write choke point as any client. The server it speaks to is, in order:

1. ``--url`` or ``$MNEMOLOG_URL``, when given;
2. the server running on the data dir (its address is in ``serving.json``);
3. else the data dir opened here, in this process, served on a Unix socket inside the data dir
   (mode 0700: no other user can reach it) for as long as the command runs. Opening it takes
   the data dir's lock, so no server may start meanwhile.

With keys live, every way needs a key in ``$MNEMOLOG_API_KEY``, as any client does.
"""

from __future__ import annotations

import os
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

__all__ = ["reach"]

SOCKET = "cli.sock"  # in the data dir, while a command serves it in process
_START_SECONDS = 120  # a first start may distil the embedder
_SOCKET_PATH_MAX = 100  # sun_path holds 108 bytes on Linux, 104 on macOS


@contextmanager
def reach(settings: Settings, url: str | None, *, timeout: float = 300.0) -> Iterator[Client]:
    """A client of the server a verb speaks to (see the module's docstring)."""
    address = url or os.environ.get("MNEMOLOG_URL") or read_address(settings.data_dir)
    if address:
        with Client(address, timeout=timeout) as client:
            yield client
        return
    with _served_here(settings) as socket_path:
        transport = httpx.HTTPTransport(uds=str(socket_path))
        # The Host the door expects of this server (its configured port): nothing listens
        # there, the socket carries the request.
        here = f"http://localhost:{settings.port}"
        with Client(here, timeout=timeout, transport=transport) as client:
            yield client


@contextmanager
def _served_here(settings: Settings) -> Iterator[Path]:
    """The data dir opened and served on a Unix socket until the block ends."""
    import uvicorn

    from .api import create_app
    from .runtime import Runtime

    os.umask(0o077)  # everything written under the data dir is private
    quiet = msgspec.structs.replace(settings, access_log=False)  # not on the terminal
    runtime = Runtime(quiet)
    try:
        socket_path = quiet.data_dir.resolve() / SOCKET
        if len(str(socket_path)) > _SOCKET_PATH_MAX:  # too long for a Unix socket's address
            socket_path = Path(tempfile.mkdtemp(prefix="mnemolog-")) / SOCKET  # mode 0700
        socket_path.unlink(missing_ok=True)  # one a killed command left
        config = uvicorn.Config(
            create_app(runtime), uds=str(socket_path), log_level="warning", access_log=False
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, name="mnemolog-cli-server", daemon=True)
        thread.start()
        deadline = time.monotonic() + _START_SECONDS
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"could not serve {quiet.data_dir} in this process")
            time.sleep(0.01)
        try:
            yield socket_path
        finally:
            server.should_exit = True
            thread.join(timeout=30)
            socket_path.unlink(missing_ok=True)
            if socket_path.parent != quiet.data_dir.resolve():
                socket_path.parent.rmdir()
    finally:
        runtime.close()
