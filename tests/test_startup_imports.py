"""What a server on the embedded defaults loads: not the PostgreSQL driver (psycopg and libpq
take ~0.1 s to import), which only a store with ``MNEMOLOG_LOG_URL`` needs."""

from __future__ import annotations

import subprocess
import sys


def test_the_runtime_and_the_cli_do_not_load_psycopg() -> None:
    code = (
        "import sys, mnemolog.runtime, mnemolog.cli, mnemolog.api.app;"
        " print(sorted(m for m in sys.modules if m.split('.')[0] == 'psycopg'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
