"""Reading programs that read standard input: CodeMind's folder layout (tests in
``input.txt`` and ``all_tests``, in number order), told apart from a folder of scripts, and
a hostile folder (links, private or oversized files, text that is not UTF-8) costing only
the programs it touches."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from execbench.program import STDIN
from execbench.sources import load_source
from execbench.sources.stdin import MAX_FILE_BYTES


def _program(folder: Path, name: str, code: str, *tests: tuple[str, str | None]) -> None:
    root = folder / name
    root.mkdir(parents=True)
    (root / "main.py").write_text(code)
    for number, (given, printed) in enumerate(tests):
        if number == 0:
            (root / "input.txt").write_text(given)
            if printed is not None:
                (root / "output.txt").write_text(printed)
            continue
        (root / "all_tests" / "input").mkdir(parents=True, exist_ok=True)
        (root / "all_tests" / "input" / f"{number * 5}_input.txt").write_text(given)
        if printed is not None:
            (root / "all_tests" / "output").mkdir(parents=True, exist_ok=True)
            (root / "all_tests" / "output" / f"{number * 5}_output.txt").write_text(printed)


def test_a_codemind_folder_is_read_in_order(tmp_path: Path) -> None:
    _program(tmp_path, "b", "print(input()[::-1])\n", ("ab\n", "ba\n"), ("xyz\n", None),
             ("q\n", "q\n"))  # tests numbered 5 and 10: 10 sorts after 5
    _program(tmp_path, "a", "print(int(input()) + 1)\n", ("1\n", "2\n"))
    loaded = load_source(str(tmp_path))
    assert loaded.format == "codemind"
    assert [(p.id.split("/", 1)[1], p.entry_point) for p in loaded.programs] == [
        ("a", STDIN), ("b", STDIN)]
    calls = loaded.programs[1].calls
    assert [(c.args, c.expected) for c in calls] == [
        ("'ab\\n'", "'ba\\n'"), ("'xyz\\n'", None), ("'q\\n'", "'q\\n'")]
    assert loaded.programs[1].meta == {"path": "b"}


def test_a_folder_of_scripts_is_still_pyfolder(tmp_path: Path) -> None:
    (tmp_path / "tool.py").write_text("def f(x):\n    return x\n\n\n"
                                      "if __name__ == '__main__':\n    f(1)\n")
    assert load_source(str(tmp_path)).format == "pyfolder"
    assert load_source(str(tmp_path), "pyfolder").programs[0].entry_point == "f"


@pytest.mark.skipif(os.geteuid() != 0, reason="a private file is refused only under root")
def test_a_hostile_folder_costs_only_what_it_touches(tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("print('secret')\n")
    folder = tmp_path / "set"
    _program(folder, "good", "print(input())\n", ("hi\n", "hi\n"))
    _program(folder, "linked", "print(1)\n", ("x\n", None))
    (folder / "linked" / "main.py").unlink()
    (folder / "linked" / "main.py").symlink_to(outside)
    _program(folder, "private", "print(1)\n", ("x\n", None))
    (folder / "private" / "input.txt").chmod(0o600)
    _program(folder, "huge", "print(1)\n", ("x" * (MAX_FILE_BYTES + 1), None))
    _program(folder, "latin", "print(1)\n", ("x\n", None))
    (folder / "latin" / "input.txt").write_bytes(b"caf\xe9\n")
    _program(folder, "lonely", "print(1)\n", ("x\n", None))
    (folder / "lonely" / "input.txt").unlink()
    loaded = load_source(str(folder))
    assert [p.id for p in loaded.programs] == ["set/good"]
    reasons = {s.id: s.reason for s in loaded.skipped}
    assert set(reasons) == {"set/huge", "set/latin", "set/linked", "set/lonely", "set/private"}
    assert reasons["set/lonely"] == "no input.txt or all_tests/input/K_input.txt beside main.py"
    assert reasons["set/linked"] == "a symbolic link: links are not followed"
    assert reasons["set/private"] == "other users cannot read it: not read as root"
    assert reasons["set/huge"] == f"over {MAX_FILE_BYTES} bytes"
    assert reasons["set/latin"] == "not UTF-8 text"
