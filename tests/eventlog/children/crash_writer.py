"""Child of ``test_crash``: eight threads append until the parent kills the process.

Usage: ``crash_writer.py LOG_DIR TAG``. A line ``ACK <writer> <n> <seq>`` is written only after
``append`` returned, so each line the parent reads is a durability promise it can check.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from mnemolog.eventlog import LmdbEventLog
from tests.factories import signal_draft

WRITERS = 8
NOTE_SIZE = 1000


def main() -> None:
    log_dir, tag = Path(sys.argv[1]), sys.argv[2]
    log = LmdbEventLog(log_dir)
    lock = threading.Lock()

    def write(writer: str) -> None:
        n = 0
        while True:
            seq = log.append([signal_draft(f"{writer}-{n}", size=NOTE_SIZE)]).seqs[0]
            with lock:
                # One write() per line: a kill can never leave half an ACK in the pipe.
                # If the parent is gone this raises BrokenPipeError and the thread ends.
                os.write(1, f"ACK {writer} {n} {seq}\n".encode())
            n += 1

    threads = [
        threading.Thread(target=write, args=(f"{tag}w{i}",), daemon=True) for i in range(WRITERS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    main()
