"""``--install-deps``: a project's declared test dependencies read as text and installed
into a cached environment of its own, here from a local folder of wheels (no network)."""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import http.server
import json
import os
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from execbench.harvest.deps import (
    ARBITRARY,
    MAX_INCLUDE_DEPTH,
    MAX_INCLUDED_FILES,
    READY,
    TOO_DEEP,
    TOO_MANY,
    cache_folder,
    declared,
    environment,
    plain_requirement,
)
from execbench.harvest.failures import TestsNotRun
from execbench.harvest.options import HarvestError, HarvestOptions
from execbench.harvest.project import harvest
from execbench.sandbox import landlock
from tests.helpers.cli import execbench


def make_wheel(folder: Path, name: str, version: str, module: str, metadata: str = "",
               files: dict[str, str] | None = None) -> Path:
    """A pure-Python wheel holding one module (and ``files``, its METADATA ending with
    ``metadata``): what pip installs without building."""
    folder.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": module, **(files or {}),
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                 + metadata,
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
    (tmp_path / "requirements-dev.txt").write_text(  # pip-compile's hashes, continued lines
        "pluggy==1.5 \\\n    --hash=sha256:00 \\\n    --hash=sha256:11\n"
        "Tomli  >= 2 ; python_version<'3.11'  # old ones\n")
    said: list[str] = []
    assert declared(tmp_path, said.append) == [
        "attrs>=22", "pytest-mock", "ruff", "hypothesis", "six", "mock", "pluggy==1.5",
        'Tomli>=2; python_version < "3.11"', "numpy"]
    assert said == ["requirements/test.txt: '--index-url https://example.invalid' not "
                    "installed: a pip option: a project's files never give pip options",
                    "1 declared entry not installed (each named above)"]
    only_setup = tmp_path / "old"
    only_setup.mkdir()
    (only_setup / "setup.py").write_text("raise SystemExit('never run')\n")
    said.clear()
    assert declared(only_setup, said.append) == []
    assert said and "setup.py, which is not run" in said[0]


def test_arbitrary_equality_and_path_like_versions_are_refused(tmp_path: Path) -> None:
    """``===`` takes any text as a version, and pip reads an entry holding a ``/`` as a
    path to a project it builds (``evil===/../../tmp/proj``): neither reaches pip."""
    hostile = ["evil===/../../tmp/proj", "evil===1.0", "evil === ../x.whl",
               "evil===C:\\\\proj", "six==1.16; python_version >= '3'"]
    (tmp_path / "requirements.txt").write_text("\n".join(hostile) + "\n")
    said: list[str] = []
    assert declared(tmp_path, said.append) == ['six==1.16; python_version >= "3"']
    assert said == [f"requirements.txt: {entry!r} not installed: {ARBITRARY}"
                    for entry in hostile[:4]] + ["4 declared entries not installed (each "
                                                 "named above)"]
    assert plain_requirement("evil>=1,<2") == ("evil<2,>=1", "")


def test_includes_are_followed_to_a_bounded_depth_and_count(tmp_path: Path) -> None:
    """A chain of 1,500 ``-r`` includes, or of ``include-group`` entries, once recursed
    once per link and ended the whole run with a ``RecursionError``."""
    chain = tmp_path / "chain"
    (chain / "r").mkdir(parents=True)
    (chain / "requirements.txt").write_text("attrs\n-r r/1.txt\n")
    for number in range(1, 1500):
        (chain / "r" / f"{number}.txt").write_text(f"pkg{number}\n-r {number + 1}.txt\n")
    (chain / "r" / "1500.txt").write_text("never-reached\n")
    said: list[str] = []
    found = declared(chain, said.append)
    assert found == ["attrs", *(f"pkg{number}" for number in range(1, MAX_INCLUDE_DEPTH + 1))]
    assert said == [f"r/{MAX_INCLUDE_DEPTH}.txt: '-r {MAX_INCLUDE_DEPTH + 1}.txt' not "
                    f"installed: {TOO_DEEP}", "1 declared entry not installed (each named above)"]

    wide = tmp_path / "wide"
    wide.mkdir()
    (wide / "requirements.txt").write_text("".join(f"-r {n}.txt\n" for n in range(100)))
    for number in range(100):
        (wide / f"{number}.txt").write_text(f"pkg{number}\n")
    said.clear()
    assert declared(wide, said.append) == [f"pkg{n}" for n in range(MAX_INCLUDED_FILES - 1)]
    assert said[0] == f"requirements.txt: '-r {MAX_INCLUDED_FILES - 1}.txt' not installed: " \
        f"{TOO_MANY}"
    assert len(said) == 100 - MAX_INCLUDED_FILES + 1 + 1

    groups = tmp_path / "groups"
    groups.mkdir()
    lines = ["[dependency-groups]", 'dev = ["attrs", {include-group = "g1"}]']
    lines += [f'g{n} = ["pkg{n}", {{include-group = "g{n + 1}"}}]' for n in range(1, 1500)]
    (groups / "pyproject.toml").write_text("\n".join([*lines, 'g1500 = ["never"]']) + "\n")
    said.clear()
    assert declared(groups, said.append) == [
        "attrs", *(f"pkg{number}" for number in range(1, MAX_INCLUDE_DEPTH + 1))]
    assert said == [f"pyproject.toml: '{{include-group = \"g{MAX_INCLUDE_DEPTH + 1}\"}}' "
                    f"not installed: {TOO_DEEP}",
                    "1 declared entry not installed (each named above)"]


def test_a_declaring_file_nested_too_deeply_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("x = " + "[" * 3000 + "]" * 3000 + "\n")
    (tmp_path / "requirements.txt").write_text("attrs\n")
    said: list[str] = []
    assert declared(tmp_path, said.append) == ["attrs"]
    assert said == ["pyproject.toml not read: nested too deeply (RecursionError)"]


def test_a_declaring_file_that_is_a_link_is_not_read(tmp_path: Path) -> None:
    """Root reads these files: one that leads to a file other users cannot read must not
    bring that file's text into a requirement, a warning or an error."""
    secret = tmp_path / "secret.cfg"
    secret.write_text("[options]\ninstall_requires =\n    the-secret-token\n")
    secret.chmod(0o600)
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "setup.cfg").symlink_to(secret)
    (root / "tests" / "requirements.txt").symlink_to(secret)
    (root / "requirements.txt").write_text("-r ../secret.cfg\n")
    said: list[str] = []
    assert declared(root, said.append) == []
    assert not any("secret-token" in message for message in said)
    assert said[:2] == ["setup.cfg not read: a symbolic link: links are not followed",
                        "tests/requirements.txt not read: a symbolic link: links are not "
                        "followed"]


def test_a_project_runs_with_its_declared_dependencies(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXECBENCH_CACHE", str(tmp_path / "cache"))
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "tinydep", "1.0", "THREE = 3\n")
    root = make_project(tmp_path / "project", "tinydep==1.0")
    local = ("--no-index", "--find-links", str(wheels))

    with pytest.raises(TestsNotRun) as without:  # the import fails: no test runs
        harvest(root, tmp_path / "without.jsonl", HarvestOptions())
    assert "No module named 'tinydep'" in "\n".join(without.value.errors)
    assert "tinydep" in without.value.hint and "--install-deps" in without.value.hint
    assert not (tmp_path / "without.jsonl").exists()

    options = HarvestOptions(install_deps=True, pip_args=local)
    result = harvest(root, tmp_path / "with.jsonl", options)
    assert result.pytest_exit == 0, result.log
    [record] = map(json.loads, (tmp_path / "with.jsonl").read_text().splitlines())
    assert [call["args"] for call in record["calls"]] == ["3"]
    [made] = cache_folder().iterdir()
    assert json.loads((made / READY).read_text())["requirements"] == ["tinydep==1.0"]

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


def test_no_module_of_the_project_runs_when_harvested_from_inside_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``cd project && execbench harvest . --install-deps``: the steps run as the invoking
    user before pip (asking the interpreter about itself, making the environment) must
    not import the project's ``json.py``, ``venv/`` or ``sysconfig.py`` from the folder
    they were started in."""
    monkeypatch.setenv("EXECBENCH_CACHE", str(tmp_path / "cache"))
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "tinydep", "1.0", "THREE = 3\n")
    root = make_project(tmp_path / "project", "tinydep==1.0")
    marker = tmp_path / "marker"
    shadow = f"import os\nopen({str(marker)!r}, 'a').write(f'{{__name__}} {{os.getuid()}}\\n')\n"
    for name in ("json.py", "sysconfig.py", "venv/__init__.py", "venv/__main__.py"):
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text(shadow)
    monkeypatch.chdir(root)
    monkeypatch.setenv("PYTHONPATH", ".")
    python = environment(Path("."), sys.executable,
                         ("--no-index", "--find-links", str(wheels)), lambda message: None)
    assert not marker.exists(), marker.read_text()
    assert Path(python).is_relative_to(cache_folder())


def test_pip_args_need_install_deps(tmp_path: Path) -> None:
    result = execbench("harvest", str(tmp_path), "--out", str(tmp_path / "h.jsonl"),
                       "--pip-args", "--no-index")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == ["error: --pip-args is for --install-deps"]


EVIL_BACKEND = """import os
with open({marker!r}, "a") as marker:
    marker.write(f"{{os.getuid()}}\\n")


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise SystemExit("never built")
"""


def evil_source(folder: Path) -> tuple[Path, Path]:
    """A source tree whose build backend, once imported, appends the uid it runs as to a
    marker file: what a build of it would run."""
    source, marker = folder / "evil-src", folder / "marker"
    source.mkdir(parents=True)
    (source / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
        '[project]\nname = "evil"\nversion = "1.0"\n')
    (source / "backend.py").write_text(EVIL_BACKEND.format(marker=str(marker)))
    return source, marker


def test_hostile_entries_are_refused_named_and_the_rest_installed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A project's author writes every entry: a direct reference, a path, an editable
    install or a pip option would have pip build the author's code (as root, before), or
    take an index or constraints from the project. Each is named in one line and left out;
    what is left is installed and the tests run."""
    monkeypatch.setenv("EXECBENCH_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")  # an entry taken as a path would name nothing here
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "tinydep", "1.0", "THREE = 3\n")
    source, marker = evil_source(tmp_path)
    url = source.as_uri()
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "x").write_text(f"evil @ {url}\n")
    root = make_project(tmp_path / "hostile" / "project", "tinydep==1.0")
    in_toml = [f"evil @ {url}", "--no-binary=:all:", "-e .", "--index-url http://127.0.0.1:9/"]
    (root / "pyproject.toml").write_text(
        '[project]\nname = "pkg"\nversion = "0"\ndependencies = '
        f'{json.dumps(in_toml)}\n[dependency-groups]\ntest = ["tinydep==1.0"]\n')
    in_cfg = [f"evil[x] @ {url}", "-e ../../evil-src", "--extra-index-url=http://127.0.0.1:9/"]
    (root / "setup.cfg").write_text(
        "[options]\ninstall_requires =\n" + "".join(f"    {e}\n" for e in in_cfg))
    in_txt = ["-r ../../etc/x", f"-e {source}", str(source), "--no-binary=:all:",
              "--index-url http://127.0.0.1:9/", "--trusted-host 127.0.0.1",
              "-c constraints.txt", "evil-1.0.tar.gz", f"evil==={'/..' * 30}{source}",
              "tinydep==1.0 --hash=sha256:0"]
    (root / "requirements.txt").write_text("\n".join(in_txt) + "\n")
    (root / "constraints.txt").write_text("tinydep==0.5\n")
    said: list[str] = []
    options = HarvestOptions(install_deps=True,
                             pip_args=("--no-index", "--find-links", str(wheels)))
    result = harvest(root, tmp_path / "out.jsonl", options, warn=said.append)

    assert not marker.exists()  # no build ran, as root or otherwise
    assert result.pytest_exit == 0, result.log  # the honest requirement was installed
    [made] = cache_folder().iterdir()
    assert json.loads((made / READY).read_text())["requirements"] == ["tinydep==1.0"]
    assert all("\n" not in message for message in said)
    for file, entries in (("pyproject.toml", in_toml), ("setup.cfg", in_cfg),
                          ("requirements.txt", in_txt[:-1])):
        for entry in entries:
            named = [m for m in said if m.startswith(f"{file}: {entry!r} ")]
            assert len(named) == 1, (file, entry, said)
    refused = len(in_toml) + len(in_cfg) + len(in_txt) - 1
    assert f"{refused} declared entries not installed (each named above)" in said


def test_a_direct_reference_inside_a_wheel_is_never_built(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wheel from the index may itself require ``name @ URL``: pip would build that
    from source whatever ``--only-binary`` says, so pip may start no program at all."""
    monkeypatch.setenv("EXECBENCH_CACHE", str(tmp_path / "cache"))
    wheels = tmp_path / "wheels"
    source, marker = evil_source(wheels)  # where pip may read it
    make_wheel(wheels, "tinydep", "1.0", "THREE = 3\n",
               metadata=f"Requires-Dist: evil @ {source.as_uri()}\n")
    root = make_project(tmp_path / "project", "tinydep==1.0")
    with pytest.raises(HarvestError) as failed:
        environment(root, sys.executable, ("--no-index", "--find-links", str(wheels)),
                    lambda message: None)
    assert "\n" not in str(failed.value)
    if landlock.abi():  # the layer that forbids pip to start a program
        assert "Permission denied" in str(failed.value)
    assert not marker.exists()
    assert list(cache_folder().iterdir()) == []


def test_startup_code_of_an_installed_wheel_never_runs_as_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wheel may hold a ``.pth`` file, run whenever the environment's interpreter
    starts: it may run in the jail, as its user, never in the parent."""
    monkeypatch.setenv("EXECBENCH_CACHE", str(tmp_path / "cache"))
    marker = tmp_path / "marker"
    wheels = tmp_path / "wheels"
    startup = f"import os; open({str(marker)!r}, 'a').write(str(os.getuid()) + ' ')\n"
    make_wheel(wheels, "tinydep", "1.0", "THREE = 3\n", files={"tinydep-startup.pth": startup})
    root = make_project(tmp_path / "project", "tinydep==1.0")
    options = HarvestOptions(install_deps=True,
                             pip_args=("--no-index", "--find-links", str(wheels)))
    result = harvest(root, tmp_path / "out.jsonl", options)
    assert result.pytest_exit == 0, result.log
    ran_as = marker.read_text().split() if marker.exists() else []
    assert "0" not in ran_as


@pytest.mark.skipif(os.geteuid() != 0, reason="pip runs as another user only under root")
def test_pip_runs_as_an_unprivileged_user_with_the_network(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen from outside: pip cannot read a wheel file only root may read, and gets the
    same file from an index over the network; the environment it made is root's again, so
    nothing running as that user later can change it."""
    monkeypatch.setenv("EXECBENCH_CACHE", str(tmp_path / "cache"))
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "tinydep", "1.0", "THREE = 3\n").chmod(0o600)
    root = make_project(tmp_path / "project", "tinydep==1.0")
    with pytest.raises(HarvestError, match="installing its test dependencies failed"):
        environment(root, sys.executable, ("--no-index", "--find-links", str(wheels)),
                    lambda message: None)
    with served(wheels) as index:
        python = Path(environment(root, sys.executable, ("--no-index", "--find-links", index),
                                  lambda message: None))
    installed = [p for p in python.parent.parent.rglob("*") if not p.is_symlink()]
    assert any(p.name == "tinydep" for p in installed)
    assert {p.lstat().st_uid for p in installed} == {0}


@contextlib.contextmanager
def served(folder: Path) -> Iterator[str]:
    """``folder`` over HTTP on the loopback, by this process (as root), while inside."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
