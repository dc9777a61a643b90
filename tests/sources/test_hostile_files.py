"""Hostile files in what execbench reads for itself, as root in CI: links and private files in
a folder of scripts or a harvested project (issue 36, class 3), and decompression bombs in a
dataset or a project archive (class 6). Each outcome is checked from outside: the files
written, and the memory and disk a load or an unpacking took."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from execbench.safe_read import LINK_REFUSED, NOT_A_FILE, Refused, Tree
from execbench.sources import SourceError, jsonl, load_source
from execbench.sources.harvest import HarvestError, HarvestOptions, harvest
from execbench.sources.harvest_many import MAX_UNPACKED_BYTES, MAX_UNPACKED_FILES, unpacked
from tests.helpers.cli import execbench

SECRET = "the-root-only-secret-4a1f"
SCRIPT = ('def square(x):\n    y = x * x\n    return y\n\n'
          'if __name__ == "__main__":\n    square(3)\n')
LEAK = (f'def reveal(x):\n    token = "{SECRET}"\n    return token + x\n\n'
        'if __name__ == "__main__":\n    reveal("a")\n')
AS_ROOT = os.geteuid() == 0


def _private(path: Path, text: str) -> Path:
    """A file only its owner may read (root's, when the tests run as root)."""
    path.write_text(text)
    path.chmod(0o600)
    return path


# --------------------------------------------------------------------------- class 3


def test_a_linked_or_private_script_is_not_read_into_the_suite(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text(LEAK)
    folder = tmp_path / "scripts"
    folder.mkdir()
    (folder / "ok.py").write_text(SCRIPT)
    (folder / "linked.py").symlink_to(outside / "secret.py")
    (folder / "linked_folder").symlink_to(outside)
    _private(folder / "private.py", LEAK)
    result = execbench("build", folder, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    written = "".join(p.read_text() for p in (tmp_path / "out").iterdir())
    assert SECRET not in written
    assert '"square"' in (tmp_path / "out" / "instances.jsonl").read_text()
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    reasons = {Path(s["where"]).name: s["reason"] for s in manifest["skipped"]}
    expected = {"linked.py"} | ({"private.py"} if AS_ROOT else set())
    assert set(reasons) == expected
    assert "symbolic link" in reasons["linked.py"]
    if AS_ROOT:
        assert "other users cannot read" in reasons["private.py"]
    assert all("\n" not in reason for reason in reasons.values())


def test_the_reader_refuses_a_link_at_any_step_and_what_is_not_a_plain_file(
        tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "deeper").mkdir(parents=True)
    (outside / "deeper" / "secret.py").write_text(LEAK)
    tree_root = tmp_path / "tree"
    (tree_root / "pkg").mkdir(parents=True)
    (tree_root / "pkg" / "ok.py").write_text(SCRIPT)
    (tree_root / "pkg" / "via").symlink_to(outside)
    os.mkfifo(tree_root / "pkg" / "pipe.py")
    with Tree(tree_root) as tree:
        assert tree.read("pkg/ok.py", 1 << 20) == SCRIPT.encode()
        for relative, said in [("pkg/via/deeper/secret.py", LINK_REFUSED),
                               ("pkg/pipe.py", NOT_A_FILE),  # and it does not block
                               ("pkg/../pkg/ok.py", "not a plain path"),
                               ("/etc/passwd", "not a plain path"),
                               ("pkg/ok.py", "over 10 bytes")]:
            with pytest.raises(Refused, match=said):
                tree.read(relative, 10 if relative == "pkg/ok.py" else 1 << 20)
        assert [(e.relative, e.kind) for e in tree.entries()] == [
            ("pkg/ok.py", "file"), ("pkg/pipe.py", "other"), ("pkg/via", "link")]


PROJECT_CORE = """\
def total(xs):
    s = 0
    for x in xs:
        s += x
    return s


def echo(text):
    out = text
    return out
"""

PROJECT_TESTS = """\
import os
from pathlib import Path

from pkg.core import echo, total

PKG = Path(__file__).resolve().parents[1] / "pkg"


def test_total():
    assert total([1, 2]) == 3


def test_repoints_the_linked_module():
    # the listing was made before the tests ran: a module of the same shape now stands
    # where the link was, so that the listed function is recorded
    os.remove(PKG / "leak.py")
    (PKG / "leak.py").write_text('def reveal(x):\\n    token = "plain"\\n    return token + x\\n')
    from pkg.leak import reveal
    assert reveal("a") == "plaina"


def test_reads_the_private_module():
    private = PKG / "private.py"
    echo(private.read_text() if private.exists() else "absent")
"""


def test_a_linked_or_private_module_is_not_read_into_a_harvest(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text(LEAK)
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "core.py").write_text(PROJECT_CORE)
    (root / "pkg" / "leak.py").symlink_to(outside / "secret.py")
    _private(root / "pkg" / "private.py", LEAK.replace("reveal", "hidden"))
    (root / "tests").mkdir()
    (root / "tests" / "test_core.py").write_text(PROJECT_TESTS)
    warnings: list[str] = []
    out = tmp_path / "out.jsonl"
    result = harvest(root, out, HarvestOptions(pytest_args=("tests",)), warn=warnings.append)
    assert result.pytest_exit == 0, result.log
    text = out.read_text()
    assert SECRET not in text
    assert "pkg.core.total" in text and "absent" in text  # the copy left the private file out
    expected = ["pkg/leak.py"] + (["pkg/private.py"] if AS_ROOT else [])
    assert sorted(w.split(":")[0] for w in warnings if w.startswith("pkg/")) == expected
    assert all("\n" not in warning for warning in warnings)


# --------------------------------------------------------------------------- class 6

RECORD = '{"id": "%s", "code": "def f(x):\\n    return x + 1", "input": "1", "output": "2"}\n'
MEASURE = """\
import json, resource, sys
from execbench.sources import load_source
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
loaded = load_source(sys.argv[1], "cruxeval")
grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"ids": [p.id for p in loaded.programs],
                  "skipped": [str(s) for s in loaded.skipped], "grew_mb": grew / 1024}))
"""


def _bomb(path: Path, megabytes: int) -> Path:
    """A gzipped JSONL file whose second record is one line of ``megabytes`` MiB."""
    block = b"a" * (1 << 20)
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write((RECORD % "first").encode())
        out.write(b'{"id": "huge", "input": "1", "output": "2", "code": "')
        for _ in range(megabytes):
            out.write(block)
        out.write(b'"}\n')
        out.write((RECORD % "last").encode())
    return path


def test_a_gzip_bomb_record_is_skipped_in_bounded_memory(tmp_path: Path) -> None:
    bomb = _bomb(tmp_path / "bomb.jsonl.gz", 200)
    assert bomb.stat().st_size < 2 << 20
    said = subprocess.run([sys.executable, "-c", MEASURE, str(bomb)], capture_output=True,
                          text=True, timeout=120, check=True)
    found = json.loads(said.stdout)
    assert found["ids"] == ["bomb/first", "bomb/last"]
    assert found["skipped"] == [f"{bomb}:2: record over {jsonl.MAX_RECORD_BYTES} bytes, skipped"]
    assert found["grew_mb"] < 150, found


def test_a_build_counts_an_oversized_record_as_skipped(tmp_path: Path) -> None:
    source = tmp_path / "big.jsonl"
    filler = "#" * (jsonl.MAX_RECORD_BYTES + 1)
    source.write_text(RECORD % "first" + json.dumps({
        "id": "huge", "code": f"def f(x):\n    {filler}\n    return x",
        "input": "1", "output": "1"}) + "\n" + RECORD % "last")
    result = execbench("build", source, "--format", "cruxeval", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["counts"]["skipped"]["records"] == 1
    [skipped] = manifest["skipped"]
    assert skipped["where"] == f"{source}:2"
    assert skipped["reason"] == f"record over {jsonl.MAX_RECORD_BYTES} bytes, skipped"
    assert manifest["counts"]["programs"] == 2


def test_a_source_over_its_bound_is_refused_in_one_line(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    bomb = _bomb(tmp_path / "bomb.jsonl.gz", 3)
    monkeypatch.setattr(jsonl, "MAX_SOURCE_BYTES", 2 << 20)
    with pytest.raises(SourceError, match="more than 2097152 bytes") as raised:
        load_source(str(bomb), "cruxeval")
    assert "\n" not in str(raised.value)


def _zeros(size: int) -> io.RawIOBase:
    """``size`` zero bytes as a file, without holding them."""
    class Zeros(io.RawIOBase):
        left = size

        def readable(self) -> bool:
            return True

        def readinto(self, buffer) -> int:
            n = min(len(buffer), self.left)
            buffer[:n] = bytes(n)
            self.left -= n
            return n
    return Zeros()


def _tar_bomb(path: Path, sizes: list[int]) -> Path:
    with tarfile.open(path, "w:gz", compresslevel=1) as packed:
        for number, size in enumerate(sizes):
            member = tarfile.TarInfo(f"project/f{number}.bin")
            member.size = size
            packed.addfile(member, _zeros(size))
    return path


def _written(folder: Path) -> tuple[int, int]:
    """Bytes and files under ``folder``."""
    files = [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []
    return sum(p.stat().st_size for p in files), len(files)


@pytest.mark.parametrize("kind", ["bytes", "files"])
def test_a_tar_bomb_is_refused_before_anything_is_written(tmp_path: Path, kind: str) -> None:
    if kind == "bytes":
        third = MAX_UNPACKED_BYTES // 3 + 1
        archive = _tar_bomb(tmp_path / "bomb.tar.gz", [third, third, third])
    else:
        archive = _tar_bomb(tmp_path / "bomb.tar.gz", [0] * (MAX_UNPACKED_FILES + 1))
    assert archive.stat().st_size < 2 << 20
    into = tmp_path / "into"
    with pytest.raises(HarvestError, match=f"more than {MAX_UNPACKED_BYTES} bytes"
                       if kind == "bytes" else f"more than {MAX_UNPACKED_FILES} files") \
            as raised:
        unpacked(archive, into)
    assert "\n" not in str(raised.value)
    assert _written(into) == (0, 0)


def test_a_zip_bomb_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    archive = tmp_path / "bomb.zip"
    block = bytes(1 << 20)
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as packed, \
            packed.open("project/big.bin", "w", force_zip64=True) as member:
        for _ in range(MAX_UNPACKED_BYTES // len(block) + 1):
            member.write(block)
    into = tmp_path / "into"
    with pytest.raises(HarvestError, match=f"more than {MAX_UNPACKED_BYTES} bytes"):
        unpacked(archive, into)
    assert _written(into) == (0, 0)


def test_an_archive_within_the_bounds_still_unpacks(tmp_path: Path) -> None:
    archive = _tar_bomb(tmp_path / "fine.tar.gz", [10, 0, 1 << 20])
    root = unpacked(archive, tmp_path / "into")
    assert _written(root) == (10 + (1 << 20), 3)
    assert root.name == "project"
