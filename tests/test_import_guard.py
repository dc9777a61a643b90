"""A folder named ``execbench`` that hides the package (issue #40): a script run beside a
clone of the repository gets one line naming the folder, not ``cannot import name
'SCHEMA_VERSION' from 'execbench' (unknown location)``."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

from execbench import import_guard


def test_the_guard_names_each_folder_standing_for_the_package(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert import_guard.shadowing_folders() is None  # this package: it has a file
    import_guard.check()
    fake = types.ModuleType("execbench")
    fake.__path__ = ["/somewhere/execbench", "/elsewhere/execbench"]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "execbench", fake)
    assert import_guard.shadowing_folders() == fake.__path__
    with pytest.raises(SystemExit) as stopped:
        import_guard.check()
    assert str(stopped.value).startswith("error: /somewhere/execbench, /elsewhere/execbench "
                                         "hides the installed execbench: ")


def _on_the_path(folder: Path) -> bool:
    """Whether a script in ``folder`` finds the package on ``sys.path`` (a plain install,
    which wins over any namespace folder) rather than by an editable install's finder."""
    asked = subprocess.run([sys.executable, "-c", "import importlib.machinery as m; "
                            "found = m.PathFinder.find_spec('execbench'); "
                            "print(found is not None and found.origin is not None)"],
                           cwd=folder, capture_output=True, text=True, timeout=120, check=True)
    return asked.stdout.strip() == "True"


@pytest.mark.parametrize("entry", ["from execbench import api", "import execbench.cli",
                                   "from execbench.suite.files import load_suite"])
def test_a_script_beside_a_folder_named_execbench_gets_one_line(entry: str, tmp_path: Path
                                                                ) -> None:
    """Each way in that reaches a module importing the package's own names."""
    if _on_the_path(tmp_path):
        pytest.skip("installed on sys.path as a package: a folder cannot hide it")
    (tmp_path / "execbench").mkdir()
    (tmp_path / "script.py").write_text(entry + "\nprint('imported')\n")
    done = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: {tmp_path / 'execbench'} hides the installed execbench: a folder named "
        "execbench in the current folder or on sys.path (a clone, say) is taken for the "
        "package; run from another folder, or rename it"], done.stderr
    # the same script elsewhere imports as ever
    (tmp_path / "execbench").rmdir()
    done = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "imported\n", done.stderr
