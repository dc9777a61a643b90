"""The package index client: the index pip would ask, a page read as hostile input (its
size bounded, every entry checked, only HTTP(S) followed) and downloads kept only when
their sha256 is the index's."""

from __future__ import annotations

import hashlib
import json
import urllib.request
from pathlib import Path

import pytest

from execbench.harvest import index
from execbench.harvest.index import download, index_url, releases
from execbench.harvest.many import unpacked
from execbench.harvest.options import HarvestError
from tests.harvest.package_index import JSON_PAGE, Index, sdist, serving


def test_the_index_is_the_one_pip_would_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    assert index_url(("--index-url", "https://a.example/simple/")) == "https://a.example/simple"
    assert index_url(("--index-url=https://b.example/simple",)) == "https://b.example/simple"
    assert index_url(("-ihttps://c.example/simple",)) == "https://c.example/simple"
    monkeypatch.setenv("PIP_INDEX_URL", "https://d.example/simple")
    assert index_url() == "https://d.example/simple"
    assert index_url(("-i", "https://e.example/x")) == "https://e.example/x"
    with pytest.raises(HarvestError, match="--no-index: a package is read from an index"):
        index_url(("--no-index",))
    with pytest.raises(HarvestError, match="'file:///srv/simple' is not an HTTP"):
        index_url(("-i", "file:///srv/simple"))
    for secret in ("https://me:s3cret@a.example/simple", "https://s3cret@a.example/simple"):
        with pytest.raises(HarvestError, match="holds credentials") as raised:
            index_url(("-i", secret))
        assert "s3cret" not in str(raised.value)  # an error ends up in summaries on disk


def _page(files: list) -> bytes:
    return json.dumps({"meta": {"api-version": "1.1"}, "files": files}).encode()


def test_hostile_page_entries_are_left_out_and_the_rest_used() -> None:
    good = {"filename": "tiny-1.0.tar.gz", "url": "/files/tiny-1.0.tar.gz",
            "hashes": {"sha256": "a" * 64}, "upload-time": "2024-05-01T10:00:00Z"}
    hostile = [
        {**good, "filename": "../../tiny-1.1.tar.gz"},      # leaves the download folder
        {**good, "filename": "other-1.2.tar.gz"},           # another package's file
        {**good, "filename": "tiny-1.3-py3-none-any.whl"},  # a wheel, not a source
        {**good, "filename": "tiny-1.4.tar.gz", "url": "file:///etc/passwd"},
        {**good, "filename": "tiny-1.5.tar.gz", "hashes": {"md5": "a" * 32}},
        {**good, "filename": "tiny-1.6.tar.gz", "hashes": {"sha256": "ZZ"}},
        {**good, "filename": "tiny-1.7.tar.gz", "upload-time": "yesterday"},
        {**good, "filename": "tiny-1.8.tar.gz", "yanked": "broken"},
        {**good, "filename": "tiny-1.9.tar.gz", "upload-time": 7},
        {**good, "filename": "tiny-1.10.tar.gz", "upload-time": "0001-01-01T00:00:00+01:00"},
        {**good, "filename": "tiny-1.11.tar.gz", "upload-time": "9999-12-31T23:59:59-01:00"},
        {**good, "filename": "tiny-1.12.tar.gz", "upload-time": "2999-01-01T00:00:00Z"},
        {**good, "filename": "tiny-1.13.tar.gz", "url": "http://[::1/tiny-1.13.tar.gz"},
        "tiny-2.0.tar.gz", None, [good],
    ]
    served = Index()
    served.raw["/simple/tiny/"] = (200, {"Content-Type": JSON_PAGE}, _page([*hostile, good]))
    with serving(served):
        found = releases("Tiny", served.url)
    assert [(r.filename, r.version, r.url) for r in found] == [
        ("tiny-1.0.tar.gz", "1.0", f"http://127.0.0.1:{served.port}/files/tiny-1.0.tar.gz")]
    assert found[0].uploaded.isoformat() == "2024-05-01T10:00:00+00:00"


@pytest.mark.parametrize(("answer", "said"), [
    ((200, {"Content-Type": "text/html"}, b"<html></html>"), "JSON form of the simple API"),
    ((200, {"Content-Type": JSON_PAGE}, b"[" * 1_500), "the index's page is not JSON"),
    ((200, {"Content-Type": JSON_PAGE}, b'{"files": 3}'), "lists no files"),
    ((200, {"Content-Type": JSON_PAGE}, b'{"files": [], "files": [{}]}'),
     "has the key 'files' twice in one object"),
    ((200, {"Content-Type": JSON_PAGE},
      b'{"files": [{"hashes": {"sha256": "' + b"a" * 64 + b'", "sha256": "' + b"b" * 64
      + b'"}}]}'), "has the key 'sha256' twice"),
    ((302, {"Location": "/simple/tiny/"}, b""), "the index answered 302"),
    ((200, {"Content-Type": JSON_PAGE}, b" " * 2_001), "over 2000 bytes"),
    ((302, {"Location": "ftp://127.0.0.1/tiny"}, b""), "redirected to 'ftp://127.0.0.1/tiny'"),
    ((302, {"Location": "file:///etc/passwd"}, b""), "answered 302"),
    ((500, {}, b"down"), "the index answered 500"),
])
def test_a_hostile_page_fails_the_package_in_one_line(
        monkeypatch: pytest.MonkeyPatch, answer: tuple, said: str) -> None:
    monkeypatch.setattr(index, "MAX_PAGE_BYTES", 2_000)
    served = Index()
    served.raw["/simple/tiny/"] = answer
    with serving(served), pytest.raises(HarvestError, match=said) as raised:
        releases("tiny", served.url)
    assert "\n" not in str(raised.value)


def test_a_download_is_kept_only_with_the_index_hash_and_within_its_bound(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    data = sdist("tiny", "1.0", {"tiny.py": "x = 1\n"})
    served = Index()
    served.add("tiny", "1.0", data, "2024-05-01T10:00:00Z")
    served.add("tiny", "1.1", data, "2024-06-01T10:00:00Z", sha256="b" * 64)
    with serving(served):
        good, forged = releases("tiny", served.url)
        kept = download(good, tmp_path)
        assert kept.read_bytes() == data
        with pytest.raises(HarvestError, match=f"the index says {'b' * 64}: not used"):
            download(forged, tmp_path)
        assert not (tmp_path / "tiny-1.1.tar.gz").exists()
        monkeypatch.setattr(index, "MAX_SDIST_BYTES", 100)
        kept.unlink()
        with pytest.raises(HarvestError, match="tiny-1.0.tar.gz: over 100 bytes"):
            download(good, tmp_path)
        assert list(tmp_path.iterdir()) == []
    assert good.sha256 == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("at_once", [0, 120], ids=["from-the-status-line", "in-the-body"])
def test_an_answer_that_trickles_is_stopped_at_the_deadline(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, at_once: int) -> None:
    """A byte every 50 ms never leaves a read waiting a minute; its 400 bytes would take
    20 s, past the deadline of 1 s the test sets."""
    monkeypatch.setattr(index, "DEADLINE_SECONDS", 1.0)
    data = sdist("tiny", "1.0", {"tiny.py": "x = 1\n"})
    served = Index()
    served.add("tiny", "1.0", data, "2024-05-01T10:00:00Z")
    page = _page(served.pages["tiny"]) + b" " * 400
    served.raw["/simple/slow/"] = (200, {"Content-Type": JSON_PAGE}, page)
    served.raw["/files/tiny-1.0.tar.gz"] = (200, {}, data + b"x" * 400)
    served.trickle = dict.fromkeys(served.raw, (0.05, at_once))
    with serving(served):
        with pytest.raises(HarvestError, match="took more than 1 s in all"):
            releases("slow", served.url)
        with pytest.raises(HarvestError, match="took more than 1 s in all"):
            download(releases("tiny", served.url)[0], tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_file_whose_name_lies_about_its_kind_fails_to_unpack(tmp_path: Path) -> None:
    """A ``.zip`` holding a gzipped tar, its hash the index's: read as a zip, refused."""
    data = sdist("tiny", "1.0", {"tiny.py": "x = 1\n"})
    served = Index()
    served.files["tiny-1.0.zip"] = data
    served.pages["tiny"] = [{"filename": "tiny-1.0.zip", "url": "/files/tiny-1.0.zip",
                             "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
                             "upload-time": "2024-05-01T10:00:00Z"}]
    with serving(served):
        kept = download(releases("tiny", served.url)[0], tmp_path)
    with pytest.raises(HarvestError, match="cannot unpack .*BadZipFile"):
        unpacked(kept, tmp_path / "unpacked")


def test_a_redirect_from_https_to_http_is_refused() -> None:
    """Asked of the redirect step itself: the tests serve no HTTPS."""
    step = index._WebOnly()
    asked = urllib.request.Request("https://a.example/simple/tiny/")
    with pytest.raises(HarvestError, match="from HTTPS to 'http://b.example/x'"):
        step.redirect_request(asked, None, 302, "Found", {}, "http://b.example/x")
    moved = step.redirect_request(asked, None, 302, "Found", {}, "https://b.example/x")
    assert moved.full_url == "https://b.example/x"
