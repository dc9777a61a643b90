"""``execbench harvest --package``: a package's releases as its index lists them, and the
download of one release's source distribution.

The index is the one pip would ask (``index_url``): ``--index-url``/``-i`` in
``--pip-args``, else the user's pip settings (``PIP_INDEX_URL``, then the ``download``
and ``global`` sections of pip's configuration, as ``pip config list`` reports them),
else PyPI. Its page for a package is read in the JSON form of the simple API (PEP 691),
whose files carry their upload time (PEP 700) and their sha256.

pip itself is not used to download: ``pip download`` of a source distribution prepares
its metadata, which runs the package's build backend (its ``setup.py``) here, outside any
jail. The download here runs nothing of the package: the file is read over HTTP(S) and
kept only when its bytes hash to the sha256 the index gave.

The index's answer is read as hostile: at most ``MAX_PAGE_BYTES`` of it, within
``DEADLINE_SECONDS`` in all however slowly its bytes come (each wait for the network also
within ``SECONDS``), no redirect to anything but HTTP(S), no content encoding asked for
(so none to unpack), the JSON checked field by field (a key twice in one object refuses
the page: readers differ on which one counts); a file whose name is not a source
distribution of the package asked for, whose URL is not HTTP(S), whose hash is not a
sha256 or whose upload time does not read as a date up to tomorrow is left out, and the
rest used. A download is bounded by ``MAX_SDIST_BYTES`` and ``DEADLINE_SECONDS``.
"""

from __future__ import annotations

import functools
import hashlib
import http.client
import io
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from packaging.utils import InvalidSdistFilename, canonicalize_name, parse_sdist_filename

from execbench import __version__
from execbench.harvest.options import HarvestError

PYPI = "https://pypi.org/simple"
JSON_PAGE = "application/vnd.pypi.simple.v1+json"
MAX_PAGE_BYTES = 64 << 20
"""Bytes of one package's page (the largest on PyPI, with thousands of files, take a few
MB)."""
MAX_SDIST_BYTES = 64 << 20
"""Bytes of one source distribution (a pure-Python package's take well under 1 MB)."""
SECONDS = 60.0
"""Seconds without an answer before a request fails."""
DEADLINE_SECONDS = 600.0
"""Seconds one request may take in all, redirects included: a server that sends a byte a
minute never leaves ``SECONDS`` without an answer (64 MiB at 1 MB/s take about 70 s)."""
SDISTS = (".tar.gz", ".zip")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Release:
    """One source distribution of a package, as its index lists it."""

    name: str
    """The package's name, normalised (PEP 503)."""
    version: str
    filename: str
    url: str
    sha256: str
    uploaded: datetime
    """When the index received the file (UTC)."""


def index_url(pip_args: tuple[str, ...] = ()) -> str:
    """The index pip would ask, without a trailing slash; see the module doc."""
    given = _from_arguments(pip_args) or os.environ.get("PIP_INDEX_URL")
    if not given:
        settings = _pip_settings()
        given = next((settings[key] for key in (":env:.index-url", "download.index-url",
                                                "global.index-url") if settings.get(key)),
                     PYPI)
    parts = urlsplit(given)
    if parts.username is not None or parts.password is not None:  # said nowhere: a secret
        raise HarvestError("the package index's address holds credentials, which harvest "
                           "does not send; give one without them")
    if parts.scheme not in ("http", "https"):
        raise HarvestError(f"the package index {given!r} is not an HTTP(S) address; give "
                           "one with --pip-args '--index-url URL'")
    return given.rstrip("/")


def _from_arguments(pip_args: tuple[str, ...]) -> str | None:
    found = None
    for position, argument in enumerate(pip_args):
        if argument == "--no-index":
            raise HarvestError("--pip-args has --no-index: a package is read from an index")
        if argument in ("--index-url", "-i") and position + 1 < len(pip_args):
            found = pip_args[position + 1]
        elif argument.startswith("--index-url="):
            found = argument.partition("=")[2]
        elif argument.startswith("-i") and len(argument) > 2:
            found = argument[2:]
    return found


def _pip_settings() -> dict[str, str]:
    """pip's settings as ``pip config list`` says them (``section.key`` to value); none
    where pip is missing or says nothing readable. pip reads its own files only: nothing
    of any package runs."""
    try:
        said = subprocess.run([sys.executable, "-I", "-m", "pip", "config", "list"],
                              capture_output=True, timeout=SECONDS, stdin=subprocess.DEVNULL,
                              cwd=os.path.dirname(sys.executable) or "/")
    except (OSError, subprocess.TimeoutExpired):
        return {}
    settings = {}
    for line in said.stdout.decode(errors="replace").splitlines():
        key, sep, value = line.partition("=")
        if sep and len(value) >= 2 and value[0] == value[-1] == "'":
            settings[key.strip()] = value[1:-1].split()[0] if value[1:-1].split() else ""
    return settings


class _WebOnly(urllib.request.HTTPRedirectHandler):
    """Redirects followed to HTTP(S) only (``urllib`` would follow one to FTP), and never
    from HTTPS to HTTP (where anyone on the way could rewrite a page and its hashes)."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> Any:
        scheme = urlsplit(newurl).scheme
        if scheme not in ("http", "https"):
            raise HarvestError(f"the index redirected to {newurl[:200]!r}, not an HTTP(S) "
                               "address")
        if scheme == "http" and urlsplit(req.full_url).scheme == "https":
            raise HarvestError(f"the index redirected from HTTPS to {newurl[:200]!r}, "
                               "which is not encrypted")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class _Deadline:
    """What is left of one request's ``DEADLINE_SECONDS``."""

    def __init__(self) -> None:
        self.end = time.monotonic() + DEADLINE_SECONDS

    def left(self) -> float:
        """Seconds the next wait may take; ``TimeoutError`` once none are left."""
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the answer took more than {DEADLINE_SECONDS:g} s in all")
        return min(left, SECONDS)


class _TimedReader(io.RawIOBase):
    """A socket's bytes, each wait for them set to what is left of the request's time."""

    def __init__(self, sock: Any, deadline: _Deadline) -> None:
        self.sock, self.deadline = sock, deadline
        self.raw = sock.makefile("rb", buffering=0)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self.sock.settimeout(self.deadline.left())
        try:
            return self.raw.readinto(buffer)
        except TimeoutError:
            self.deadline.left()  # says the deadline passed, where it did
            raise

    def close(self) -> None:
        self.raw.close()
        super().close()


class _TimedSocket:
    """The socket as an HTTP response reads it (its ``makefile`` only)."""

    def __init__(self, sock: Any, deadline: _Deadline) -> None:
        self.sock, self.deadline = sock, deadline

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_TimedReader(self.sock, self.deadline))


def _timed_connection(base: Any, deadline: _Deadline, host: str, **kwargs: Any) -> Any:
    """An HTTP(S) connection whose connect and reads stay within ``deadline``."""
    kwargs["timeout"] = deadline.left()
    connection = base(host, **kwargs)
    connection.response_class = functools.partial(_timed_response, deadline)
    return connection


def _timed_response(deadline: _Deadline, sock: Any, *args: Any, **kwargs: Any
                    ) -> http.client.HTTPResponse:
    timed: Any = _TimedSocket(sock, deadline)  # all a response asks of its socket
    return http.client.HTTPResponse(timed, *args, **kwargs)


class _Timed:
    """A handler whose connections stay within one request's deadline (mixed into urllib's
    HTTP and HTTPS handlers)."""

    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(functools.partial(  # type: ignore[misc]
            _timed_connection, http_class, self.deadline), req, **kwargs)


class _TimedHTTP(_Timed, urllib.request.HTTPHandler):
    pass


class _TimedHTTPS(_Timed, urllib.request.HTTPSHandler):
    pass


def _open(url: str, accept: str) -> Any:
    request = urllib.request.Request(url, headers={
        "Accept": accept, "User-Agent": f"execbench/{__version__}"})
    deadline = _Deadline()
    try:
        return urllib.request.build_opener(_WebOnly, _TimedHTTP(deadline),
                                           _TimedHTTPS(deadline)).open(request)
    except urllib.error.HTTPError as exc:
        raise HarvestError(f"{url}: the index answered {exc.code} {_said(exc.reason)}") \
            from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise HarvestError(f"{url}: cannot reach the index: {_said(reason)}") from None


def _said(reason: object) -> str:
    """Why a request failed, in one line of printable characters (the server's words
    may hold line breaks, as urllib's redirect loop does, or terminal escapes), cut."""
    text = " ".join("".join(c if c.isprintable() else " " for c in str(reason)).split())
    return text if len(text) <= 200 else text[:200] + "..."


def releases(name: str, index: str) -> list[Release]:
    """Every source distribution of ``name`` the index lists and does not mark yanked, in
    the order it lists them; ``HarvestError`` if the page cannot be had or read."""
    wanted = canonicalize_name(name)
    page = f"{index}/{wanted}/"
    try:
        with _open(page, JSON_PAGE) as answer:
            kind = answer.headers.get("Content-Type", "")
            body = answer.read(MAX_PAGE_BYTES + 1)
            page = answer.geturl()
    except (OSError, http.client.HTTPException) as exc:
        raise HarvestError(f"{page}: the index's answer was cut: {_said(exc)}") from None
    if len(body) > MAX_PAGE_BYTES:
        raise HarvestError(f"{page}: the index's page is over {MAX_PAGE_BYTES} bytes")
    if JSON_PAGE not in kind:
        raise HarvestError(f"{page}: the index does not answer in the JSON form of the "
                           f"simple API (PEP 691; it said {kind[:100]!r})")
    try:
        found = json.loads(body, object_pairs_hook=_once_each)
    except _Twice as exc:
        raise HarvestError(f"{page}: the index's page has the key {str(exc)[:100]!r} twice "
                           "in one object") from None
    except (ValueError, RecursionError):
        raise HarvestError(f"{page}: the index's page is not JSON") from None
    files = found.get("files") if isinstance(found, dict) else None
    if not isinstance(files, list):
        raise HarvestError(f"{page}: the index's page lists no files")
    return [release for entry in files
            if (release := _release(entry, wanted, page)) is not None]


class _Twice(Exception):
    """A JSON object holds this key twice."""


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _Twice(key)
        found[key] = value
    return found


def _release(entry: Any, wanted: str, page: str) -> Release | None:
    """One file of the page as a release, or None if it is no usable source distribution
    of the package (see the module doc)."""
    if not isinstance(entry, dict) or entry.get("yanked", False) is not False:
        return None
    filename, url, hashes, uploaded = (entry.get(key) for key in
                                       ("filename", "url", "hashes", "upload-time"))
    if not (isinstance(filename, str) and isinstance(url, str) and isinstance(hashes, dict)
            and isinstance(uploaded, str)) or not filename.endswith(SDISTS) \
            or os.path.basename(filename) != filename or "\\" in filename:
        return None
    try:
        name, version = parse_sdist_filename(filename)
        when = datetime.fromisoformat(uploaded.replace("Z", "+00:00"))
        when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
        address = urljoin(page, url).partition("#")[0]
        scheme = urlsplit(address).scheme
    except (InvalidSdistFilename, ValueError, OverflowError):  # year 1 at +01:00 overflows
        return None
    if when > datetime.now(UTC) + timedelta(days=1):  # no index received it yet
        return None
    digest = hashes.get("sha256")
    if name != wanted or not isinstance(digest, str) or not _SHA256.fullmatch(digest) \
            or scheme not in ("http", "https"):
        return None
    return Release(name, str(version), filename, address, digest, when)


def download(release: Release, folder: Path) -> Path:
    """``release``'s file in ``folder``, kept only when it hashes to the index's sha256
    (``HarvestError`` otherwise, the partial file removed)."""
    target = folder / release.filename
    digest = hashlib.sha256()
    size = 0
    try:
        with _open(release.url, "*/*") as answer, open(target, "xb") as kept:
            while chunk := answer.read(_CHUNK):
                size += len(chunk)
                if size > MAX_SDIST_BYTES:
                    raise HarvestError(f"{release.filename}: over {MAX_SDIST_BYTES} bytes")
                digest.update(chunk)
                kept.write(chunk)
    except (HarvestError, OSError, http.client.HTTPException) as exc:
        target.unlink(missing_ok=True)
        if isinstance(exc, HarvestError):
            raise
        raise HarvestError(f"{release.filename}: download failed: {_said(exc)}") from None
    if digest.hexdigest() != release.sha256:
        target.unlink()
        raise HarvestError(f"{release.filename}: its sha256 is {digest.hexdigest()}, the "
                           f"index says {release.sha256}: not used")
    return target
