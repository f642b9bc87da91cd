"""Child of ``test_faults``: append single drafts one after another, reporting each outcome.

Usage: ``sequential_appender.py LOG_DIR COUNT``. Prints ``READY`` once the log is open, then
``ACK <n> <seq>`` or ``FAIL <n> <error code>`` for each append. If opening the log fails it
prints ``OPEN_FAILED <error code or exception type>`` instead and exits 0, so the parent can
tell a refused open from a crash.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from mnemolog.errors import MnemologError
from mnemolog.eventlog import LmdbEventLog
from tests.factories import signal_draft

NOTE_SIZE = 1000


def main() -> None:
    log_dir, count = Path(sys.argv[1]), int(sys.argv[2])
    try:
        log = LmdbEventLog(log_dir)
    except Exception as exc:  # reported, not raised: the parent asserts on what kind it was
        kind = (
            exc.code
            if isinstance(exc, MnemologError)
            else f"{type(exc).__module__}.{type(exc).__qualname__}"
        )
        print(f"OPEN_FAILED {kind}", flush=True)
        return
    print("READY", flush=True)
    with log:
        for n in range(count):
            try:
                seq = log.append([signal_draft(f"draft-{n}", size=NOTE_SIZE)]).seqs[0]
            except MnemologError as exc:
                print(f"FAIL {n} {exc.code}", flush=True)
            else:
                print(f"ACK {n} {seq}", flush=True)


if __name__ == "__main__":
    main()
