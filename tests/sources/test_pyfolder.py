"""Loading a folder of scripts whose ``__main__`` blocks call their functions."""

from __future__ import annotations

from pathlib import Path

from execbench.program import Call
from execbench.sources import load_source
from execbench.sources.pyfolder import NO_CALLS

TOOLS = '''"""Two helpers."""
LIMIT = 10


def square(x):
    return x * x


def clip(x, top=LIMIT):
    return min(x, top)


if __name__ == "__main__":
    n = 4
    print(square(3))
    assert square(2) == 4
    print(clip(square(5), top=LIMIT))
    square(n)
    square(3)

print("after the block")
'''

SINGLE = '''def shout(text):
    return text.upper()

if "__main__" == __name__:
    shout("hi")
'''

LIBRARY = '''def unused(x):
    return x
'''


def _folder(root: Path) -> Path:
    folder = root / "Scripts"
    (folder / "sub").mkdir(parents=True)
    (folder / "tools.py").write_text(TOOLS)
    (folder / "library.py").write_text(LIBRARY)
    (folder / "sub" / "single.py").write_text(SINGLE)
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "ignored.py").write_text(SINGLE)
    return folder


def test_folder_of_scripts(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    loaded = load_source(str(folder))
    assert (loaded.name, loaded.format, loaded.origin) == ("Scripts", "pyfolder", str(folder))
    ids = [p.id for p in loaded.programs]
    assert ids == ["Scripts/sub/single", "Scripts/tools::square", "Scripts/tools::clip"]
    single, square, clip = loaded.programs
    assert single.entry_point == "shout"
    assert single.calls == (Call('"hi"'),)  # argument text is cut verbatim
    assert square.calls == (Call("3"), Call("2", "4"), Call("5"))
    assert clip.calls == (Call("square(5), top=LIMIT"),)
    kept = TOOLS.split('if __name__ == "__main__":')[0] + '\nprint("after the block")\n'
    assert square.code == clip.code == kept
    assert square.meta == {"path": "tools.py", "skipped_calls": 1}
    assert [(s.where, s.id, s.reason) for s in loaded.skipped] == [
        (str(folder / "library.py"), "Scripts/library", NO_CALLS),
        (f"{folder / 'tools.py'}:18", "Scripts/tools::square",
         "call 4 of square() uses a name local to the __main__ block 'n'"),
    ]


def test_folder_digest_follows_contents(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    before = load_source(str(folder)).sha256
    assert load_source(str(folder), "pyfolder").sha256 == before
    (folder / "library.py").write_text(LIBRARY + "\n")
    assert load_source(str(folder)).sha256 != before


def test_unreadable_scripts_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("def f(:\n    pass\n")
    (tmp_path / "latin.py").write_bytes(b"# caf\xe9\n")
    loaded = load_source(str(tmp_path))
    assert loaded.programs == []
    assert [s.reason for s in loaded.skipped] == ["code does not compile: invalid syntax (line 1)",
                                                  "not UTF-8 text"]
