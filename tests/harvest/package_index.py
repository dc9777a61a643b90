"""A package index on 127.0.0.1 for the ``harvest --package`` tests: each package's page
in the JSON form of the simple API (PEP 691) with upload times (PEP 700), the files it
lists, and any raw answer a hostile test wants at a path of its own, sent at once or a
byte at a time."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

JSON_PAGE = "application/vnd.pypi.simple.v1+json"


def sdist(name: str, version: str, files: dict[str, str]) -> bytes:
    """A source distribution as a ``.tar.gz``: ``files`` under ``NAME-VERSION/``."""
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tar:
        for path, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(f"{name}-{version}/{path}")
            info.size, info.mtime = len(data), 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return packed.getvalue()


@dataclass
class Index:
    """What the server answers; ``requests`` logs every path asked, in order."""

    port: int = 0
    pages: dict[str, list[dict]] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    raw: dict[str, tuple[int, dict[str, str], bytes]] = field(default_factory=dict)
    trickle: dict[str, tuple[float, int]] = field(default_factory=dict)
    """Paths whose answer is sent a byte each so many seconds, after its first so many
    bytes (0: from its status line)."""
    requests: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/simple"

    def add(self, name: str, version: str, data: bytes, uploaded: str,
            sha256: str | None = None) -> None:
        """A release's file, listed on its package's page (``sha256``: a wrong one)."""
        filename = f"{name}-{version}.tar.gz"
        self.files[filename] = data
        self.pages.setdefault(name, []).append({
            "filename": filename, "url": f"../../files/{filename}",
            "hashes": {"sha256": sha256 or hashlib.sha256(data).hexdigest()},
            "upload-time": uploaded, "yanked": False})


@contextmanager
def serving(index: Index) -> Iterator[Index]:
    """``index`` answered on a free port of 127.0.0.1 while the block runs."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            index.requests.append(self.path)
            if self.path in index.raw:
                status, headers, body = index.raw[self.path]
                self._answer(status, headers, body)
                return
            parts = self.path.strip("/").split("/")
            if parts[0] == "simple" and len(parts) == 2 and parts[1] in index.pages:
                page = {"meta": {"api-version": "1.1"}, "name": parts[1],
                        "files": index.pages[parts[1]], "versions": []}
                self._answer(200, {"Content-Type": JSON_PAGE}, json.dumps(page).encode())
            elif parts[0] == "files" and len(parts) == 2 and parts[1] in index.files:
                self._answer(200, {"Content-Type": "application/octet-stream"},
                             index.files[parts[1]])
            else:
                self._answer(404, {}, b"not found")

        def _answer(self, status: int, headers: dict[str, str], body: bytes) -> None:
            if self.path in index.trickle:
                self._trickle(status, headers, body, *index.trickle[self.path])
                return
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _trickle(self, status: int, headers: dict[str, str], body: bytes, every: float,
                     at_once: int) -> None:
            answer = b"".join([f"HTTP/1.1 {status} Slow\r\n".encode(),
                               *(f"{key}: {value}\r\n".encode() for key, value in
                                 {**headers, "Content-Length": len(body)}.items()),
                               b"\r\n", body])
            try:
                self.wfile.write(answer[:at_once])
                for position in range(at_once, len(answer)):
                    self.wfile.write(answer[position:position + 1])
                    self.wfile.flush()
                    time.sleep(every)
            except OSError:  # the client gave up
                self.close_connection = True

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    index.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield index
    finally:
        server.shutdown()
        server.server_close()
