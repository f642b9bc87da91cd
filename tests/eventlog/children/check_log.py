"""Child of ``test_faults``: check a possibly damaged log the way an operator would.

Usage: ``check_log.py LOG_DIR [LOG_DIR ...]``. For each log in turn: runs ``verify_log``; if it
reports the log intact, reads every record through a fresh ``LmdbEventLog``. Prints one JSON
line per log, flushed before the next is opened: ``verify_ok``, ``reason``, and either
``digests`` (every record's digest, in seq order) or ``error`` (the ``MnemologError`` code
reading raised). It runs in its own process because damaged LMDB files have been known to kill
their reader with SIGBUS or SIGSEGV: the parent asserts that never happens, and if it did, the
log that killed it is the one after the last line printed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from mnemolog.errors import MnemologError
from mnemolog.eventlog import LmdbEventLog, verify_log


def main() -> None:
    for arg in sys.argv[1:]:
        check(Path(arg))


def check(log_dir: Path) -> None:
    report = verify_log(log_dir)
    out: dict[str, object] = {"verify_ok": report.ok, "reason": report.reason}
    if report.ok:
        try:
            with LmdbEventLog(log_dir) as log:
                out["digests"] = [stored.digest for stored in log.read()]
        except MnemologError as exc:
            out["error"] = exc.code
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
