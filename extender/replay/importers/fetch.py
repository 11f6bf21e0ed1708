"""Pinned files of public traces in the local cache: found there when their sha256 is the
pinned one, downloaded (``fetch``) when they are missing or differ.

The cache is ``$KUBE_EXTENDER_CACHE/traces/<trace>`` (default ``~/.cache/kube-extender``); a
CI machine without network access keeps the files there. Every problem is a
:class:`FetchError` naming the file and what to do.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

TIMEOUT_SECONDS = 60.0


class FetchError(Exception):
    """A pinned file that is missing, differs from its pin, or cannot be downloaded."""


def cache_root() -> Path:
    """``$KUBE_EXTENDER_CACHE`` (default ``~/.cache/kube-extender``)."""
    root = os.environ.get("KUBE_EXTENDER_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "kube-extender"


def trace_cache(trace: str) -> Path:
    """Where the files of the public trace ``trace`` are kept."""
    return cache_root() / "traces" / trace


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(url: str) -> bytes:
    """The body at ``url`` (urllib; :class:`FetchError` on any network or HTTP error)."""
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response:
            body: bytes = response.read()
            return body
    except urllib.error.HTTPError as exc:
        raise FetchError(f"cannot download {url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise FetchError(f"cannot download {url}: {reason}") from None


def ensure(
    directory: Path,
    pinned: Mapping[str, tuple[str, str]],
    *,
    fetch: bool,
    get: Callable[[str], bytes] = download,
) -> list[Path]:
    """The paths of the files of ``pinned`` (name -> (url, sha256)) in ``directory``.

    A file there with the pinned sha256 is used as is (never downloaded again). A missing
    file, or one whose sha256 differs, is downloaded from its url when ``fetch`` is true (and
    must then have the pinned sha256; it is written atomically), else it is a
    :class:`FetchError` that says to fetch it.
    """
    paths = []
    for name, (url, sha256) in pinned.items():
        path = directory / name
        if path.is_file():
            actual = sha256_of(path)
            if actual == sha256:
                paths.append(path)
                continue
            if not fetch:
                raise FetchError(
                    f"{path}: sha256 {actual} is not the pinned {sha256} (delete it, or give "
                    "--fetch to download the pinned file again)"
                )
        elif not fetch:
            raise FetchError(f"{path}: missing (give --fetch to download it from {url})")
        try:
            body = get(url)
        except FetchError as exc:
            raise FetchError(f"{exc} (or copy the pinned file into {directory})") from None
        actual = hashlib.sha256(body).hexdigest()
        if actual != sha256:
            raise FetchError(f"{url}: downloaded sha256 {actual} is not the pinned {sha256}")
        try:
            directory.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=directory, prefix=f".{name}.", delete=False) as f:
                f.write(body)
            os.replace(f.name, path)
        except OSError as exc:
            raise FetchError(f"{path}: cannot write: {exc}") from None
        paths.append(path)
    return paths
