"""``--install-deps``: a project's declared test dependencies read as text and installed
into a cached environment of its own, here from a local folder of wheels (no network)."""

from __future__ import annotations

import base64
import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from execbench.sources.harvest import HarvestError, HarvestOptions, harvest
from execbench.sources.harvest_deps import READY, cache_folder, declared
from tests.helpers.cli import execbench


def make_wheel(folder: Path, name: str, version: str, module: str) -> Path:
    """A pure-Python wheel holding one module: what pip installs without building."""
    folder.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": module,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n"}
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel


def make_project(root: Path, needs: str) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "core.py").write_text("def double(x):\n    y = x * 2\n    return y\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_core.py").write_text(
        "import tinydep\nfrom pkg.core import double\n\n\n"
        "def test_double():\n    assert double(tinydep.THREE) == 6\n")
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "pkg"\nversion = "0"\n\n[dependency-groups]\ntest = ["{needs}"]\n')
    return root


def test_declared_requirements_are_read_as_text(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\ndependencies = ["attrs>=22"]\n'
        '[project.optional-dependencies]\ntest = ["pytest-mock"]\ndocs = ["sphinx"]\n'
        '[dependency-groups]\ndev = [{include-group = "lint"}, "hypothesis"]\n'
        'lint = ["ruff"]\n')
    (tmp_path / "setup.cfg").write_text(
        "[options]\ninstall_requires =\n    six\n[options.extras_require]\ntesting =\n"
        "    mock\n")
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "test.txt").write_text(
        "-r base.txt\nnumpy  # arrays\n--index-url https://example.invalid\nattrs>=22\n")
    (tmp_path / "requirements" / "base.txt").write_text("# base\nsix\n-r test.txt\n")
    said: list[str] = []
    assert declared(tmp_path, said.append) == ["attrs>=22", "pytest-mock", "ruff", "hypothesis",
                                               "six", "mock", "numpy"]
    assert said == ["requirements/test.txt: '--index-url https://example.invalid' left out "
                    "(only requirements are installed)"]
    only_setup = tmp_path / "old"
    only_setup.mkdir()
    (only_setup / "setup.py").write_text("raise SystemExit('never run')\n")
    said.clear()
    assert declared(only_setup, said.append) == []
    assert said and "setup.py, which is not run" in said[0]


def test_a_project_runs_with_its_declared_dependencies(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXECBENCH_CACHE", str(tmp_path / "cache"))
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "tinydep", "1.0", "THREE = 3\n")
    root = make_project(tmp_path / "project", "tinydep==1.0")
    local = ("--no-index", "--find-links", str(wheels))

    without = harvest(root, tmp_path / "without.jsonl", HarvestOptions())
    assert without.pytest_exit != 0 and without.calls.get("kept", 0) == 0  # import fails

    options = HarvestOptions(install_deps=True, pip_args=local)
    result = harvest(root, tmp_path / "with.jsonl", options)
    assert result.pytest_exit == 0, result.log
    [record] = map(json.loads, (tmp_path / "with.jsonl").read_text().splitlines())
    assert [call["args"] for call in record["calls"]] == ["3"]
    [made] = cache_folder().iterdir()
    assert json.loads((made / READY).read_text()) == ["tinydep==1.0"]

    # the same requirements again: the environment is reused, not made anew
    stamp = (made / READY).stat().st_mtime_ns
    again = harvest(root, tmp_path / "again.jsonl", options)
    assert again.pytest_exit == 0 and (made / READY).stat().st_mtime_ns == stamp
    assert (tmp_path / "again.jsonl").read_bytes() == (tmp_path / "with.jsonl").read_bytes()

    # a requirement no wheel satisfies fails that project, in one line, leaving no half-made
    # environment behind
    missing = make_project(tmp_path / "missing", "nosuchdep==9")
    with pytest.raises(HarvestError, match="installing its test dependencies failed: .*nosuchdep"):
        harvest(missing, tmp_path / "missing.jsonl", options)
    assert [p.name for p in cache_folder().iterdir()] == [made.name]


def test_pip_args_need_install_deps(tmp_path: Path) -> None:
    result = execbench("harvest", str(tmp_path), "--out", str(tmp_path / "h.jsonl"),
                       "--pip-args", "--no-index")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == ["error: --pip-args is for --install-deps"]
