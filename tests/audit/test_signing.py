"""Signed exports: the store key signs an export's range, and both verifiers (the stdlib tool
and ``mnemolog verify-log FILE``) catch a truncated or altered export and another key."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from mnemolog.audit import signing
from mnemolog.audit.export import verify_export
from mnemolog.cli import main
from mnemolog.eventlog import LmdbEventLog
from mnemolog.eventlog.datadir import keys_dir, log_dir
from mnemolog.runtime import Runtime

from ..factories import signal_draft
from ..servers import MNEMOLOG
from .conftest import audit_server, write
from .test_export import load_verifier

ROOT = Path(__file__).resolve().parents[2]
VERIFIER = ROOT / "tools" / "verify_log.py"
verify_log = load_verifier()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    with LmdbEventLog(log_dir(tmp_path / "data")) as log:
        log.append([signal_draft(f"s{i}") for i in range(6)])
    return tmp_path / "data"


def tool(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """tools/verify_log.py on the standard library alone (-I -S: no site-packages)."""
    return subprocess.run(
        [sys.executable, "-I", "-S", str(VERIFIER), *args],
        input=None if stdin is None else stdin.decode(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def signed_export(data_dir: Path, *extra: str) -> bytes:
    result = cli("export-log", "--data-dir", str(data_dir), "--sign", *extra)
    assert result.exit_code == 0, result.output
    data: bytes = result.stdout_bytes
    return data


def public_key(data_dir: Path) -> dict[str, str]:
    result = cli("store-key", "--data-dir", str(data_dir), "--json")
    assert result.exit_code == 0, result.output
    shown: dict[str, str] = json.loads(result.output)
    return shown


def lines_of(export: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in export.splitlines()]


def joined(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines)


def both_refuse(path: Path, message: str, *pin: str) -> None:
    """The stdlib tool and ``mnemolog verify-log FILE`` both fail on it, saying ``message``."""
    done = tool(str(path), *pin)
    assert done.returncode == 1 and message in done.stderr, done.stderr
    result = cli("verify-log", str(path), *pin)
    assert result.exit_code == 1 and message in result.stderr, result.stderr


def test_a_signed_export_verifies_and_names_its_key(data_dir: Path, tmp_path: Path) -> None:
    key = public_key(data_dir)
    raw = base64.b64decode(key["publicKey"])
    assert key["alg"] == "ed25519" and len(raw) == 32
    assert key["fingerprint"] == signing.fingerprint(raw)
    text = cli("store-key", "--data-dir", str(data_dir))
    assert text.output == f"ed25519 {key['publicKey']}\n{key['fingerprint']}\n"

    export = signed_export(data_dir)
    path = tmp_path / "signed.jsonl"
    path.write_bytes(export)
    header = lines_of(export)[0]
    with LmdbEventLog(log_dir(data_dir)) as log:
        head = log.head()
    assert header["signature"] == {
        "alg": "ed25519",
        "publicKey": key["publicKey"],
        "records": 6,
        "sig": header["signature"]["sig"],
    }
    # The signature is over the documented message, checkable by any Ed25519 library.
    message = (
        "mnemolog-log-export-signature\nformat mnemolog-log-export\nversion 1\nfrom 1\nto 6\n"
        f"records 6\nprev {'0' * 64}\nlast {head.digest}\n"
    ).encode()
    public = serialization.load_der_public_key(
        bytes.fromhex("302a300506032b6570032100") + raw  # SubjectPublicKeyInfo of Ed25519
    )
    public.verify(base64.b64decode(header["signature"]["sig"]), message)  # type: ignore[union-attr,call-arg]

    expected = f"ok: 6 records, seq 1..6, last {head.digest}, signed by {key['fingerprint']}\n"
    for pin in ([], ["--public-key", key["publicKey"]], ["--public-key", key["fingerprint"]]):
        done = tool(str(path), *pin)
        assert (done.returncode, done.stdout) == (0, expected), done.stderr
        result = cli("verify-log", str(path), *pin)
        assert (result.exit_code, result.output) == (0, expected), result.output
    report = json.loads(tool(str(path), "--json").stdout)
    assert (report["ok"], report["signed"], report["last"]) == (True, True, head.digest)
    assert (report["publicKey"], report["fingerprint"]) == (key["publicKey"], key["fingerprint"])
    from_stdin = tool("-", "--public-key", key["fingerprint"], stdin=export)
    assert from_stdin.returncode == 0

    # A signed range: the signature covers where it starts, too.
    part = signed_export(data_dir, "--from", "3", "--to", "5")
    assert lines_of(part)[0]["signature"]["records"] == 3
    assert verify_log.verify(io.BytesIO(part), public_key=key["publicKey"])["ok"]
    assert verify_export(io.BytesIO(part), public_key=key["publicKey"]).ok


def test_a_truncated_export_is_caught(data_dir: Path, tmp_path: Path) -> None:
    key = public_key(data_dir)["publicKey"]
    lines = lines_of(signed_export(data_dir))
    path = tmp_path / "cut.jsonl"
    # Records cut off the end, the header rewritten to end where they now do.
    cut = [dict(lines[0], to=4, last=lines[4]["hash"]), *lines[1:5]]
    path.write_bytes(joined(cut))
    both_refuse(path, "line 1: the signature counts 6 records, the range holds 4")
    # ... its signed record count too.
    cut[0]["signature"] = dict(cut[0]["signature"], records=4)
    path.write_bytes(joined(cut))
    both_refuse(path, "line 1: bad signature: the header is not what the key signed")
    # Records cut off, the header left as it was.
    path.write_bytes(joined(lines[:5]))
    both_refuse(path, "line 6: missing: ends before seq 5, the header says 6")
    # The signature stripped, so that it passes for unsigned: only a pinned key catches it.
    stripped = [{k: v for k, v in cut[0].items() if k != "signature"}, *cut[1:]]
    path.write_bytes(joined(stripped))
    assert tool(str(path)).returncode == 0
    both_refuse(path, "line 1: the export is not signed, and it must be", "--public-key", key)


def test_an_altered_export_is_caught(data_dir: Path, tmp_path: Path) -> None:
    lines = lines_of(signed_export(data_dir))
    path = tmp_path / "altered.jsonl"
    altered = [*lines]
    record = json.loads(lines[3]["record"])
    record["event"]["label"] = "forged"
    text = json.dumps(record, separators=(",", ":"))
    altered[3] = dict(
        lines[3], record=text, event=record["event"], hash=hashlib.sha256(text.encode()).hexdigest()
    )
    path.write_bytes(joined(altered))
    both_refuse(path, "line 5: does not chain")
    # A range whose header claims another start: covered by the signature.
    part = lines_of(signed_export(data_dir, "--from", "2"))
    path.write_bytes(joined([dict(part[0], prev="f" * 64), *part[1:]]))
    both_refuse(path, "line 1: bad signature: the header is not what the key signed")


def test_a_signature_by_another_key_is_caught(data_dir: Path, tmp_path: Path) -> None:
    ours = public_key(data_dir)
    export = signed_export(data_dir)
    other = tmp_path / "other"
    with LmdbEventLog(log_dir(other)) as log:
        log.append([signal_draft(f"s{i}") for i in range(6)])
    theirs = public_key(other)
    assert theirs["fingerprint"] != ours["fingerprint"]
    # The same records signed by another store: intact, but not by the pinned key.
    path = tmp_path / "theirs.jsonl"
    path.write_bytes(signed_export(other))
    assert tool(str(path)).returncode == 0
    message = f"line 1: signed by another key: {theirs['fingerprint']}, not {ours['fingerprint']}"
    both_refuse(path, message, "--public-key", ours["publicKey"])
    both_refuse(path, message, "--public-key", ours["fingerprint"])
    # Our signature presented under their public key does not hold.
    lines = lines_of(export)
    lines[0]["signature"]["publicKey"] = theirs["publicKey"]
    path.write_bytes(joined(lines))
    both_refuse(path, "line 1: bad signature")
    bad_pin = tool(str(path), "--public-key", "not-a-key")
    assert bad_pin.returncode == 2 and "--public-key" in bad_pin.stderr
    assert cli("verify-log", str(path), "--public-key", "not-a-key").exit_code == 2


def test_unsigned_exports_are_as_before(data_dir: Path, tmp_path: Path) -> None:
    result = cli("export-log", "--data-dir", str(data_dir))
    assert result.exit_code == 0
    header = lines_of(result.stdout_bytes)[0]
    assert set(header) == {"format", "version", "from", "to", "prev", "last"}
    path = tmp_path / "plain.jsonl"
    path.write_bytes(result.stdout_bytes)
    with LmdbEventLog(log_dir(data_dir)) as log:
        head = log.head()
    done = tool(str(path))
    assert (done.returncode, done.stdout) == (0, f"ok: 6 records, seq 1..6, last {head.digest}\n")
    shown = cli("verify-log", str(path))
    assert shown.output == f"ok: 6 records, seq 1..6, last {head.digest}, unsigned\n"
    assert not json.loads(tool(str(path), "--json").stdout)["signed"]
    # An unsigned export makes no key.
    assert not signing.key_path(data_dir).exists()
    # And verify-log without a file still checks the data dir's log.
    assert cli("verify-log", "--data-dir", str(data_dir)).exit_code == 0


def test_the_key_file_is_private_and_made_once(data_dir: Path) -> None:
    keys: list[bytes] = []
    threads = [
        threading.Thread(
            target=lambda: keys.append(signing.public_bytes(signing.store_key(data_dir)))
        )
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(keys)) == 1  # racing first uses all keep the one that was linked first
    path = signing.key_path(data_dir)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in data_dir.iterdir() if p.name.endswith(".tmp")] == []
    assert base64.b64decode(public_key(data_dir)["publicKey"]) == keys[0]
    assert cli("store-key", "--data-dir", str(data_dir.parent / "none")).exit_code == 2


def test_the_stdlib_ed25519_agrees_with_cryptography() -> None:
    for size in (0, 1, 64, 300):
        key = Ed25519PrivateKey.generate()
        message = os.urandom(size)
        sig = key.sign(message)
        public = signing.public_bytes(key)
        assert verify_log.ed25519_verify(public, message, sig)
        assert not verify_log.ed25519_verify(public, message + b"x", sig)
        assert not verify_log.ed25519_verify(public, message, sig[:-1] + bytes([sig[-1] ^ 1]))
        other = signing.public_bytes(Ed25519PrivateKey.generate())
        assert not verify_log.ed25519_verify(other, message, sig)


def secret_forms(data_dir: Path) -> list[bytes]:
    """The store key's private half as raw bytes and in every text form it could leak in."""
    key = signing.store_key(data_dir)
    raw = key.private_bytes(
        serialization.Encoding.Raw,
        serialization.PrivateFormat.Raw,
        serialization.NoEncryption(),
    )
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    body = b"".join(pem.splitlines()[1:-1])
    assert signing.key_path(data_dir).read_bytes() == raw  # the file holds the raw key
    return [
        raw,
        raw.hex().encode(),
        base64.b64encode(raw),
        base64.b64encode(raw).rstrip(b"="),
        body,
    ]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Runtime]]:
    data_dir = tmp_path_factory.mktemp("signing") / "data"
    with audit_server(data_dir, stream_chunk_records=2) as (client, runtime):
        write(client, "u-sign", "Ada keeps the signing ceremony notes", "Grace audits on Fridays")
        yield client, runtime


def test_the_http_export_signs_on_request(
    server: tuple[httpx.Client, Runtime], tmp_path: Path
) -> None:
    client, runtime = server
    data_dir = runtime.settings.data_dir
    plain = client.get("/log/export")
    assert plain.status_code == 200 and "signature" not in plain.text.splitlines()[0]
    response = client.get("/log/export", params={"sign": "true"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-ndjson"
    export = response.content
    assert export.splitlines()[1:] == plain.content.splitlines()[1:]
    key = signing.encode_public_key(signing.store_key(data_dir))
    assert lines_of(export)[0]["signature"]["publicKey"] == key
    path = tmp_path / "http.jsonl"
    path.write_bytes(export)
    done = tool(str(path), "--public-key", key)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(f", signed by {signing.fingerprint(base64.b64decode(key))}\n")
    # Ed25519 is deterministic: the CLI beside the live server gives the same bytes.
    beside = subprocess.run(
        [MNEMOLOG, "export-log", "--data-dir", str(data_dir), "--sign"],
        capture_output=True,
        timeout=60,
    )
    assert beside.returncode == 0, beside.stderr
    assert beside.stdout == export
    ranged = client.get("/log/export", params={"from": "2", "to": "3", "sign": "1"})
    assert verify_log.verify(io.BytesIO(ranged.content), public_key=key)["records"] == 2
    # Saved by a browser under a name that says what it is.
    assert ranged.headers["content-disposition"] == (
        'attachment; filename="mnemolog-log-2-3-signed.jsonl"'
    )
    assert client.get("/log/export", params={"sign": "false"}).content == plain.content
    refused = client.get("/log/export", params={"sign": "maybe"})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_input"


def test_the_private_key_is_in_no_export_and_no_store(
    server: tuple[httpx.Client, Runtime],
) -> None:
    client, runtime = server
    data_dir = runtime.settings.data_dir
    export = client.get("/log/export", params={"sign": "true"}).content
    assert b'"signature"' in export
    stores = [
        (log_dir(data_dir) / "data.mdb").read_bytes(),
        (keys_dir(data_dir) / "data.mdb").read_bytes(),
    ]
    for secret in secret_forms(data_dir):
        assert secret not in export
        for store in stores:
            assert secret not in store
    assert stat.S_IMODE(signing.key_path(data_dir).stat().st_mode) == 0o600
