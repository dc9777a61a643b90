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

from execbench.harvest.listing import MAX_MODULE_TOKENS, list_functions
from execbench.harvest.many import (
    MAX_ALL_HEADER_BYTES,
    MAX_HEADER_BYTES,
    MAX_HEADER_CHAIN,
    MAX_UNPACKED_BYTES,
    MAX_UNPACKED_FILES,
    unpacked,
)
from execbench.harvest.options import HarvestError, HarvestOptions
from execbench.harvest.project import harvest
from execbench.safe_read import LINK_REFUSED, NOT_A_FILE, Refused, Tree
from execbench.sources import SourceError, generic, jsonl, load_source
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


PEAK = """\
def peak_mb():
    # this process's own high-water mark: getrusage's ru_maxrss keeps the parent's across
    # fork and exec, which a test process that just wrote a bomb would mask
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
"""
UNPACK = PEAK + """\
import json, sys
from pathlib import Path
from execbench.harvest.many import unpacked
before = peak_mb()
try:
    unpacked(Path(sys.argv[1]), Path(sys.argv[2]))
    said = None
except Exception as exc:
    said = f"{type(exc).__name__}: {exc}"
print(json.dumps({"said": said, "grew_mb": peak_mb() - before}))
"""


def _header(name: str, size: int, kind: bytes) -> bytes:
    member = tarfile.TarInfo(name)
    member.size, member.type = size, kind
    return member.tobuf(format=tarfile.USTAR_FORMAT)


def _padded(data: bytes) -> bytes:
    return data + bytes(-len(data) % tarfile.BLOCKSIZE)


def _pax_record(key: bytes, value: bytes) -> bytes:
    """``LENGTH key=value\\n``, where the length counts the whole record, its own digits too."""
    body = b" " + key + b"=" + value + b"\n"
    digits = len(str(len(body)))
    while len(str(len(body) + digits)) != digits:
        digits += 1
    return b"%d" % (len(body) + digits) + body


def _sparse_header(blocks: int) -> bytes:
    """An old GNU sparse member's header followed by ``blocks`` extension blocks, each
    naming 21 regions: tarfile keeps every region of every block in a list."""
    member = tarfile.TarInfo("project/sparse.bin")
    member.type = tarfile.GNUTYPE_SPARSE
    head = bytearray(member.tobuf(format=tarfile.GNU_FORMAT))
    head[482] = 1  # isextended
    head[148:156] = b" " * 8
    head[148:156] = b"%06o\0 " % sum(head)
    region = tarfile.itn(1, 12, tarfile.GNU_FORMAT) * 2
    more = _padded(region * 21)[:504] + b"\x01" + bytes(7)
    last = more[:504] + bytes(8)
    return bytes(head) + more * (blocks - 1) + last


def _header_bomb(path: Path, kind: str) -> Path:
    """A small ``.tar.gz`` whose one file comes after headers that tarfile reads whole into
    memory before any member check can see them (64 MiB of them)."""
    total = 64 << 20
    with gzip.open(path, "wb", compresslevel=1) as out:
        if kind == "pax":
            record = _pax_record(b"comment", b"A" * total)
            out.write(_header("././@PaxHeader", len(record), tarfile.XHDTYPE))
            out.write(_padded(record))
        elif kind == "long names":
            name = b"a" * (640 << 10) + b"\0"
            for _ in range(total // len(name)):
                out.write(_header("././@LongLink", len(name), tarfile.GNUTYPE_LONGNAME))
                out.write(_padded(name))
        elif kind == "sparse":
            out.write(_sparse_header(total // tarfile.BLOCKSIZE))
        elif kind == "chain":  # each header is read by a nested call, and held meanwhile
            record = _pax_record(b"comment", b"A" * (100 << 10))
            out.write((_header("././@PaxHeader", len(record), tarfile.XHDTYPE)
                       + _padded(record)) * 64)
        else:  # global headers stay with the archive, each member under its own bound
            data = SCRIPT.encode()
            for number in range(total // (900 << 10)):
                record = _pax_record(b"comment%d" % number, b"A" * (900 << 10))
                out.write(_header("././@PaxHeader", len(record), tarfile.XGLTYPE)
                          + _padded(record))
                out.write(_header(f"project/m{number}.py", len(data), tarfile.REGTYPE)
                          + _padded(data))
        data = SCRIPT.encode()
        out.write(_header("project/mod.py", len(data), tarfile.REGTYPE) + _padded(data))
        out.write(bytes(2 * tarfile.BLOCKSIZE))
    return path


ONE_MEMBER = (f"a member's headers (extended headers, long names, sparse maps) take more than "
              f"{MAX_HEADER_BYTES} bytes")


@pytest.mark.parametrize(("kind", "refused"), [
    ("pax", ONE_MEMBER), ("long names", ONE_MEMBER), ("sparse", ONE_MEMBER),
    ("chain", f"a member has more than {MAX_HEADER_CHAIN} headers"),
    ("global", f"its headers take more than {MAX_ALL_HEADER_BYTES} bytes in all")],
    ids=["pax", "long names", "sparse", "chain", "global"])
def test_a_tar_whose_headers_are_a_bomb_is_refused_in_bounded_memory(
        tmp_path: Path, kind: str, refused: str) -> None:
    archive = _header_bomb(tmp_path / "bomb.tar.gz", kind)
    assert archive.stat().st_size < 2 << 20
    into = tmp_path / "into"
    said = subprocess.run([sys.executable, "-c", UNPACK, str(archive), str(into)],
                          capture_output=True, text=True, timeout=120, check=True)
    found = json.loads(said.stdout)
    assert found["said"] == (f"HarvestError: {archive}: {refused}; unpack it yourself and "
                             "give the folder"), found
    assert found["grew_mb"] < 48, found
    assert _written(into) == (0, 0)


def test_long_names_in_pax_and_gnu_headers_still_unpack(tmp_path: Path) -> None:
    deep = "project/" + "/".join(["d" * 60] * 4) + "/mod.py"
    for form in (tarfile.PAX_FORMAT, tarfile.GNU_FORMAT):
        archive = tmp_path / f"long{form}.tar.gz"
        with tarfile.open(archive, "w:gz", format=form) as packed:
            member = tarfile.TarInfo(deep)
            data = SCRIPT.encode()
            member.size = len(data)
            member.pax_headers = {"comment": "x" * 4000} if form == tarfile.PAX_FORMAT else {}
            packed.addfile(member, io.BytesIO(data))
        root = unpacked(archive, tmp_path / f"into{form}")
        assert (root.parent / deep).read_text() == SCRIPT


LOAD = PEAK + """\
import json, sys
from execbench.sources import load_source
before = peak_mb()
loaded = load_source(sys.argv[1], sys.argv[2])
print(json.dumps({"ids": [p.id for p in loaded.programs], "grew_mb": peak_mb() - before,
                  "skipped": {s.id: s.reason for s in loaded.skipped}}))
"""


def test_records_that_parse_into_huge_trees_are_skipped_in_bounded_memory(
        tmp_path: Path) -> None:
    """Records under the record bound whose code or arguments ``ast.parse`` would turn into
    millions of nodes (a few hundred bytes each): refused from their size and a linear
    count of their words and symbols before any parse, one line each."""
    many = generic.MAX_PARSED_TOKENS + 1
    hostile = {
        "chars": {"code": "def f(x):\n    return x\ny = a" + "+a" * (1 << 20) + "\n",
                  "input": "1"},
        "statements": {"code": "def f(x):\n    return x\n" + "a\n" * (many // 2 + 1),
                       "input": "1"},
        "arguments": {"code": "def f(x):\n    return x\n",
                      "input": "[" + "1," * (many // 2 + 1) + "]"},
        "deep": {"code": "def f(x):\n    return x\ny = a" + "+a" * 50_000 + "\n",
                 "input": "1"}}
    source = tmp_path / "bomb.jsonl.gz"
    with gzip.open(source, "wt") as out:
        out.write(RECORD % "first")
        for name, record in hostile.items():
            out.write(json.dumps({"id": name, "output": "1", **record}) + "\n")
        out.write(RECORD % "last")
    assert source.stat().st_size < 1 << 20
    said = subprocess.run([sys.executable, "-c", LOAD, str(source), "cruxeval"],
                          capture_output=True, text=True, timeout=120, check=True)
    found = json.loads(said.stdout)
    assert found["ids"] == ["bomb/first", "bomb/last"]
    reasons = found["skipped"]
    assert reasons["bomb/chars"] == (f"code of {len(hostile['chars']['code'])} characters, "
                                     f"over the bound of {generic.MAX_PARSED_CHARS}")
    assert reasons["bomb/statements"].startswith("code of ")
    assert reasons["bomb/statements"].endswith(
        f" words and symbols, over the bound of {generic.MAX_PARSED_TOKENS}")
    assert reasons["bomb/arguments"].startswith("call 1: arguments of ")
    assert reasons["bomb/deep"] == "code does not compile: RecursionError"
    assert found["grew_mb"] < 60, found


def _load_hostile(path: Path, records: list[dict[str, str]], fmt: str) -> dict:
    with gzip.open(path, "wt") as out:
        out.writelines(json.dumps(record) + "\n" for record in records)
    said = subprocess.run([sys.executable, "-c", LOAD, str(path), fmt], capture_output=True,
                          text=True, timeout=120, check=True)
    return json.loads(said.stdout)


def test_a_test_module_or_a_call_too_large_to_parse_is_skipped(tmp_path: Path) -> None:
    """What HumanEval's ``test`` and a contest record's ``input`` hold is parsed too: the
    same bounds, and a call nested too deeply for the parser is one skipped record."""
    many = generic.MAX_PARSED_TOKENS + 1
    solution = {"prompt": "def f(x):\n", "canonical_solution": "    return x\n",
                "entry_point": "f"}
    check = "def check(candidate):\n    assert candidate(1) == 1\n"
    test = check + "a\n" * (many // 2 + 1)
    found = _load_hostile(tmp_path / "humaneval.jsonl.gz", [
        {"task_id": "Toy/0", **solution, "test": check},
        {"task_id": "Toy/1", **solution, "test": test}], "humaneval")
    assert found["ids"] == ["humaneval/Toy/0"]
    over = f"words and symbols, over the bound of {generic.MAX_PARSED_TOKENS}"
    assert found["skipped"] == {
        "humaneval/Toy/1": f"key 'test' of {generic.count_tokens(test)} {over}"}
    assert found["grew_mb"] < 60, found

    call = {"id": "ok", "code": "def f(x):\n    return x\n", "function_name": "f",
            "input": "f(1)", "output": "1", "contest_date": "2024-01-01"}
    large = "f([" + "1," * (many // 2 + 1) + "])"
    found = _load_hostile(tmp_path / "contest.jsonl.gz", [
        call, {**call, "id": "deep", "input": "f(" + "1+" * 50_000 + "1)"},
        {**call, "id": "large", "input": large}], "contest")
    assert found["ids"] == ["contest/ok"]
    assert found["skipped"] == {
        "contest/deep": "key 'input' is not a call of f: RecursionError",
        "contest/large": f"key 'input' of {generic.count_tokens(large)} {over}"}
    assert found["grew_mb"] < 60, found


def test_a_module_nested_too_deeply_or_too_large_is_left_out_of_a_listing(
        tmp_path: Path) -> None:
    """A harvested project's modules are parsed by the parent, as root: a module whose tree
    is too deep for ``ast`` (or for the checks of one function) or too large is one
    warning, and the other functions are still listed."""
    (tmp_path / "deep.py").write_text("def f(x):\n    y = x" + "+x" * 50_000 + "\n    return y\n")
    (tmp_path / "mid.py").write_text("def g(x):\n    y = x" + "+x" * 600 + "\n    return y\n")
    (tmp_path / "large.py").write_text("a\n" * (MAX_MODULE_TOKENS // 2 + 1))
    (tmp_path / "fine.py").write_text("def h(x):\n    y = x + 1\n    return y\n")
    said: list[str] = []
    listed = {f.id: f.skip for f in list_functions(tmp_path, 200, said.append)}
    assert listed == {"fine.h": None, "mid.g": "too deeply nested to check (RecursionError)"}
    assert sorted(said) == [
        "deep.py: not read (nested too deeply: RecursionError)",
        f"large.py: not read: {MAX_MODULE_TOKENS + 2} words and symbols, over the bound of "
        f"{MAX_MODULE_TOKENS}"]
