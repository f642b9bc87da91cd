"""Put ``mnemolog`` on the PATH: a symlink in ``~/.local/bin`` (the user's directory for
commands, on the PATH of Debian's and most distributions' login shells) to this checkout's
``.venv/bin/mnemolog``.

Run by ``make serve`` and ``make test``. A symlink already there is pointed at this checkout;
a regular file of that name (another installation's) is left alone, and said so. Set
``MNEMOLOG_NO_LINK=1`` to skip it, or ``MNEMOLOG_BIN_DIR`` to link elsewhere.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> int:
    if os.environ.get("MNEMOLOG_NO_LINK"):
        return 0
    target = Path(sys.executable).parent / "mnemolog"
    bin_dir = Path(os.environ.get("MNEMOLOG_BIN_DIR") or Path.home() / ".local" / "bin")
    link = bin_dir / "mnemolog"
    if link.exists() and not link.is_symlink():
        print(f"mnemolog: {link} is another installation's; left as it is", file=sys.stderr)
        return 0
    bin_dir.mkdir(parents=True, exist_ok=True)
    tmp = bin_dir / ".mnemolog.link"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target)
    tmp.replace(link)  # atomic: a command running meanwhile finds the old link or the new
    on_path = any(
        Path(entry).resolve() == bin_dir.resolve()
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if entry
    )
    if not on_path:
        print(
            f"mnemolog: linked {link}; {bin_dir} is not on your PATH yet: a new login shell"
            f' adds it, or run: export PATH="{bin_dir}:$PATH"',
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
