#!/usr/bin/env python3
"""Check a mnemolog log export with nothing but the Python standard library.

    python3 tools/verify_log.py log.jsonl
    mnemolog export-log | python3 tools/verify_log.py -
    python3 tools/verify_log.py log.jsonl --expect-last HASH --json
    python3 tools/verify_log.py signed.jsonl --public-key KEY

An export (``mnemolog export-log`` or ``GET /log/export``) is a header line, then one JSON line
per record. This checks, line by line: that each record's SHA-256 is the hash the line states,
that the decoded fields of the line are those of the record, that seqs run on without a gap,
a repeat or a step back, that each record's ``prev`` is the hash of the one before, that time
never goes backwards, and that the records are exactly the range the header announces, ending
on the hash it names. The construction is specified in docs/audit.md so it can be
re-implemented in any language. It imports nothing of mnemolog, on purpose: an auditor need
not install or trust it.

A signed export (``export-log --sign``) carries in its header an Ed25519 signature by the
store key over the format, the range, its record count and its first and last hashes; it is
checked here with a small pure-Python Ed25519 (RFC 8032, verification only), and
``--public-key`` requires it to be by the key given (its base64 or ``SHA256:`` fingerprint).

Exit 0: the export is intact. 1: it is not (the first bad line and why, on stderr).
2: bad usage, or the file cannot be read.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import datetime
import hashlib
import json
import re
import sys

FORMAT = "mnemolog-log-export"
VERSION = 1
GENESIS = "0" * 64
HEADER_KEYS = {"format", "version", "from", "to", "prev", "last"}
SIGNATURE_KEYS = {"alg", "publicKey", "records", "sig"}
SIGNATURE_DOMAIN = "mnemolog-log-export-signature"
LINE_KEYS = {"seq", "time", "kind", "actor", "prev", "hash", "event", "record"}
RECORD_KEYS = {"v", "seq", "ts", "actor", "prev", "event"}
_HEX64 = re.compile(r"[0-9a-f]{64}")


class Bad(Exception):
    """The export fails a check at one line."""

    def __init__(self, line, reason):
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


def _no_duplicates(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"key {key!r} appears twice")
        obj[key] = value
    return obj


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def parse_json(text):
    """Strict JSON: a key twice in one object, NaN or Infinity are refused."""
    return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)


def same(a, b):
    """Equal values of equal JSON types: 1, 1.0 and true are three different values."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))  # noqa: B905 (3.9-)
    return a == b


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def rfc3339_ns(ts):
    """Nanoseconds since the epoch as ``YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`` (UTC)."""
    seconds, nanos = divmod(ts, 1_000_000_000)
    m = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)  # noqa: UP017 (3.10-)
    return (
        f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}"
        f".{nanos:09d}Z"
    )


# Ed25519 verification (RFC 8032 section 5.1.7), in extended coordinates; only public data
# goes through it, so it need not run in constant time.
_P = 2**255 - 19
_L = 2**252 + 27742317777372353535851937790883648493
_D = -121665 * pow(121666, _P - 2, _P) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)


def _add(a, b):
    x1, y1, z1, t1 = a
    x2, y2, z2, t2 = b
    pa = (y1 - x1) * (y2 - x2) % _P
    pb = (y1 + x1) * (y2 + x2) % _P
    pc = 2 * t1 * t2 * _D % _P
    pd = 2 * z1 * z2 % _P
    e, f, g, h = pb - pa, pd - pc, pd + pc, pb + pa
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _multiply(scalar, point):
    result = (0, 1, 1, 0)
    while scalar > 0:
        if scalar & 1:
            result = _add(result, point)
        point = _add(point, point)
        scalar >>= 1
    return result


def _same_point(a, b):
    return (a[0] * b[2] - b[0] * a[2]) % _P == 0 and (a[1] * b[2] - b[1] * a[2]) % _P == 0


def _recover_x(y, sign):
    if y >= _P:
        return None
    x2 = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P) % _P
    if x2 == 0:
        return None if sign else 0
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P != 0:
        x = x * _SQRT_M1 % _P
    if (x * x - x2) % _P != 0:
        return None
    return _P - x if (x & 1) != sign else x


def _decompress(data):
    y = int.from_bytes(data, "little")
    sign, y = y >> 255, y & ((1 << 255) - 1)
    x = _recover_x(y, sign)
    return None if x is None else (x, y, 1, x * y % _P)


_BASE_Y = 4 * pow(5, _P - 2, _P) % _P
_BASE = (_recover_x(_BASE_Y, 0), _BASE_Y, 1, _recover_x(_BASE_Y, 0) * _BASE_Y % _P)


def ed25519_verify(public_key, message, signature):
    """Whether ``signature`` (64 bytes) is ``public_key``'s (32 bytes) over ``message``."""
    if len(public_key) != 32 or len(signature) != 64:
        return False
    a, r = _decompress(public_key), _decompress(signature[:32])
    s = int.from_bytes(signature[32:], "little")
    if a is None or r is None or s >= _L:
        return False
    h = int.from_bytes(hashlib.sha512(signature[:32] + public_key + message).digest(), "little")
    return _same_point(_multiply(s, _BASE), _add(r, _multiply(h % _L, a)))


def decode_b64(text, size):
    """Canonical standard base64 of exactly ``size`` bytes, else None."""
    if not isinstance(text, str):
        return None
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        return None
    if len(raw) != size or base64.b64encode(raw).decode("ascii") != text:
        return None
    return raw


def fingerprint(public_key):
    """``SHA256:`` and the unpadded base64 of SHA-256 of the raw 32-byte public key."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(public_key).digest()).decode().rstrip("=")


def signed_message(header):
    """The bytes the store key signs: one ``name value`` line per field of the header."""
    records = header["to"] - header["from"] + 1
    return (
        f"{SIGNATURE_DOMAIN}\nformat {header['format']}\nversion {header['version']}\n"
        f"from {header['from']}\nto {header['to']}\nrecords {records}\n"
        f"prev {header['prev']}\nlast {header['last']}\n"
    ).encode("ascii")


def check_signature(header, line, pinned):
    """Check the header's signature, if any; return the signing key's fingerprint or None."""
    signature = header.get("signature")
    if signature is None:
        if pinned is not None:
            raise Bad(line, f"the export is not signed, and it must be, by {pinned}")
        return None
    if not isinstance(signature, dict) or set(signature) != SIGNATURE_KEYS:
        raise Bad(line, f"the signature's fields are not {sorted(SIGNATURE_KEYS)}")
    public = decode_b64(signature["publicKey"], 32)
    sig = decode_b64(signature["sig"], 64)
    if signature["alg"] != "ed25519" or public is None or sig is None:
        raise Bad(line, "the signature is not an ed25519 signature with its public key")
    records = header["to"] - header["from"] + 1
    if not same(signature["records"], records):
        raise Bad(
            line,
            f"the signature counts {signature['records']!r} records, the range holds {records}",
        )
    if not ed25519_verify(public, signed_message(header), sig):
        raise Bad(line, "bad signature: the header is not what the key signed")
    found = fingerprint(public)
    if pinned is not None and found != pinned:
        raise Bad(line, f"signed by another key: {found}, not {pinned}")
    return found


def pinned_fingerprint(text):
    """The fingerprint ``--public-key`` pins: the base64 key or its ``SHA256:`` fingerprint."""
    if text.startswith("SHA256:"):
        return text
    raw = decode_b64(text, 32)
    if raw is None:
        raise ValueError("a public key is the base64 of 32 bytes or a SHA256: fingerprint")
    return fingerprint(raw)


def check_header(obj, line):
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise Bad(line, f"not a {FORMAT} header")
    if set(obj) - {"signature"} != HEADER_KEYS:
        raise Bad(line, f"the header's fields are {sorted(obj)}, not {sorted(HEADER_KEYS)}")
    if not same(obj["version"], VERSION):
        raise Bad(line, f"unknown export version {obj['version']!r}")
    first, last = obj["from"], obj["to"]
    if not (is_int(first) and is_int(last) and first >= 1 and last >= first - 1):
        raise Bad(line, f"the header's range from {first!r} to {last!r} is not a range")
    for name in ("prev", "last"):
        if not (isinstance(obj[name], str) and _HEX64.fullmatch(obj[name])):
            raise Bad(line, f"the header's {name} is not a SHA-256 in hex")
    if first == 1 and obj["prev"] != GENESIS:
        raise Bad(line, "an export from seq 1 must continue from 64 zeros")
    if last == first - 1 and obj["last"] != obj["prev"]:
        raise Bad(line, "an empty export must end on the hash it continues from")
    return obj


def check_record(obj, line, seq, prev, ts):
    """Check one record line against the state so far; return its (hash, ts)."""
    if not isinstance(obj, dict) or set(obj) != LINE_KEYS:
        found = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
        raise Bad(line, f"not a record line (fields {found})")
    if not isinstance(obj["record"], str):
        raise Bad(line, "record is not a string")
    try:
        data = obj["record"].encode("utf-8")
    except UnicodeEncodeError:
        raise Bad(line, "record is not valid Unicode") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != obj["hash"]:
        raise Bad(line, f"hash mismatch: the record hashes to {digest}, not {obj['hash']!r:.80}")
    try:
        record = parse_json(obj["record"])
    except ValueError as exc:
        raise Bad(line, f"record is not JSON: {exc}") from None
    if not isinstance(record, dict) or set(record) != RECORD_KEYS:
        raise Bad(line, "record is not a version 1 envelope")
    if not same(record["v"], 1):
        raise Bad(line, f"unknown envelope version {record['v']!r}")
    event = record["event"]
    if not (is_int(record["seq"]) and is_int(record["ts"]) and isinstance(event, dict)):
        raise Bad(line, "record has a malformed seq, ts or event")
    view = {
        "seq": record["seq"],
        "time": rfc3339_ns(record["ts"]),
        "kind": event.get("type"),
        "actor": record["actor"],
        "prev": record["prev"],
        "event": event,
    }
    for name, value in view.items():
        if not same(obj[name], value):
            raise Bad(line, f"the line's {name} is not its record's")
    if record["seq"] != seq:
        if record["seq"] < seq:
            raise Bad(line, f"seq {record['seq']} repeats or goes back (expected {seq})")
        raise Bad(line, f"gap: expected seq {seq}, found {record['seq']}")
    if record["prev"] != prev:
        raise Bad(line, f"does not chain: prev is {record['prev']}, the hash before is {prev}")
    if record["ts"] < ts:
        raise Bad(line, "time goes backwards")
    return digest, record["ts"]


def verify(stream, expect_prev=None, expect_last=None, public_key=None):
    """Check an export read from a binary stream; return a report (a dict).

    ``public_key`` (the base64 key, or its ``SHA256:`` fingerprint) requires the export to be
    signed by that key."""
    pinned = None if public_key is None else pinned_fingerprint(public_key)
    header = None
    seq = prev = None
    ts = 0
    number = 0
    records = 0
    report = {"ok": False, "records": 0, "from": None, "to": None, "prev": None, "last": None}
    report.update({"signed": False, "publicKey": None, "fingerprint": None})
    try:
        for number, raw in enumerate(stream, start=1):
            try:
                obj = parse_json(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise Bad(number, f"not a line of JSON: {exc}") from None
            if header is None:
                header = check_header(obj, number)
                signer = check_signature(header, number, pinned)
                if signer is not None:
                    report.update(
                        {
                            "signed": True,
                            "publicKey": header["signature"]["publicKey"],
                            "fingerprint": signer,
                        }
                    )
                seq, prev = header["from"], header["prev"]
                if expect_prev is not None and prev != expect_prev:
                    raise Bad(number, f"continues from {prev}, not from {expect_prev}")
                report.update({"from": header["from"], "to": header["to"], "prev": prev})
                continue
            if seq > header["to"]:
                raise Bad(number, f"a record past the header's last seq {header['to']}")
            prev, ts = check_record(obj, number, seq, prev, ts)
            seq += 1
            records += 1
            report.update({"records": records, "last": prev})
        if header is None:
            raise Bad(1, "the export is empty (no header)")
        if seq <= header["to"]:
            raise Bad(number + 1, f"missing: ends before seq {seq}, the header says {header['to']}")
        if prev != header["last"]:
            raise Bad(number, f"the last hash is {prev}, the header says {header['last']}")
        if expect_last is not None and prev != expect_last:
            raise Bad(number, f"the last hash is {prev}, not the expected {expect_last}")
    except Bad as bad:
        report.update({"first_bad_line": bad.line, "reason": bad.reason})
        return report
    report.update({"ok": True, "last": prev, "first_bad_line": None, "reason": None})
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Check a mnemolog log export (JSON Lines) with the standard library only."
    )
    parser.add_argument("export", help="the export file, or - for standard input")
    parser.add_argument("--expect-prev", metavar="HASH", help="the hash it must continue from")
    parser.add_argument("--expect-last", metavar="HASH", help="the hash it must end on")
    parser.add_argument(
        "--public-key",
        metavar="KEY",
        help="require a signature by this key (base64, or its SHA256: fingerprint)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    checks = (args.expect_prev, args.expect_last, args.public_key)
    try:
        if args.export == "-":
            report = verify(sys.stdin.buffer, *checks)
        else:
            with open(args.export, "rb") as stream:
                report = verify(stream, *checks)
    except OSError as exc:
        print(f"cannot read {args.export}: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # a --public-key that is no key
        print(f"--public-key: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report))
    elif report["ok"]:
        span = f", seq {report['from']}..{report['to']}" if report["records"] else ""
        signed = f", signed by {report['fingerprint']}" if report["signed"] else ""
        print(f"ok: {report['records']} records{span}, last {report['last']}{signed}")
    else:
        print(f"bad: line {report['first_bad_line']}: {report['reason']}", file=sys.stderr)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
