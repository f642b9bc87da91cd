"""A command run beside a server asks that server: the data dir is its, not the command's.

The server wrote its address into the data dir when it started (``serving.json``); the
command calls the same REST route a client would, with the key in ``MNEMOLOG_API_KEY`` when
keys are live, and answers what the server answered. A refusal is printed as the server's
JSON error on standard error, and the command exits 1.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import click
import httpx

from .serving import read_address

EXIT_FAILED = 1


def ask_server(
    data_dir: Path,
    method: str,
    path: str,
    *,
    params: dict[str, str] | None = None,
    body: object = None,
    ok: int = 200,
) -> dict[str, Any]:
    """The JSON answer of the server holding ``data_dir`` to one request (exits on failure)."""
    url = read_address(data_dir)
    if url is None:
        click.echo(
            f"mnemolog: another process holds {data_dir} and no server address is recorded"
            " in it: stop that process, or use its HTTP API",
            err=True,
        )
        sys.exit(EXIT_FAILED)
    key = os.environ.get("MNEMOLOG_API_KEY")
    headers = {"authorization": f"Bearer {key}"} if key else {}
    try:
        response = httpx.request(
            method, f"{url}{path}", params=params, json=body, headers=headers, timeout=300
        )
    except httpx.HTTPError as exc:
        click.echo(f"mnemolog: the server at {url} did not answer: {exc}", err=True)
        sys.exit(EXIT_FAILED)
    answer = response.json()
    if response.status_code != ok:
        fail(answer)
    found: dict[str, Any] = answer
    return found


def fail(body: object) -> NoReturn:
    click.echo(json.dumps(body), err=True)
    sys.exit(EXIT_FAILED)
