"""``execbench harvest --install-deps``: a virtual environment per project holding the test
dependencies it declares, so that its tests import what they need.

What counts as declared, read as text (nothing of the project runs): ``pyproject.toml``'s
``project.dependencies``, its ``project.optional-dependencies`` and ``dependency-groups``
named ``test``, ``tests``, ``testing`` or ``dev``; ``setup.cfg``'s ``install_requires``
and the same extras; and requirements files (``requirements.txt``,
``requirements-test.txt``, ``test-requirements.txt``, ``requirements-dev.txt``,
``requirements/test.txt``, ``tests/requirements.txt``), whose ``-r`` includes are followed
inside the project. A ``setup.py`` is never run: a project that declares its dependencies
only there gets a warning and no environment.

The environment is made from the interpreter the harvest runs (``--python``) with its
site folders visible after its own (pytest and what the user has installed stay
importable; what the project needs comes first), and pip
installs the requirements on top with ``--only-binary=:all:``: wheels only, so no package's
build code runs on this machine at install time (a package with no wheel fails the
install, and that project alone). It is kept in a cache folder, named by a digest of the
interpreter, the requirements and the pip arguments, and reused by every later harvest
that needs the same; it is made under a temporary name and renamed when complete, so a
half-made one is never used. pip reaches the network (or the index ``--pip-args`` names)
outside the harvest's jail; the tests then run in the jail as always, with no network.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import os
import shutil
import subprocess
import tomllib
from collections.abc import Callable
from pathlib import Path

from execbench.sources.harvest import HarvestError

GROUPS = ("test", "tests", "testing", "dev")
REQUIREMENT_FILES = ("requirements.txt", "requirements-test.txt", "test-requirements.txt",
                     "requirements_test.txt", "requirements-dev.txt", "requirements/test.txt",
                     "tests/requirements.txt")
READY = ".execbench-ready"
INSTALL_SECONDS = 1800.0


def cache_folder() -> Path:
    """Where the environments are kept: ``$EXECBENCH_CACHE/venvs``, else
    ``$XDG_CACHE_HOME/execbench/venvs``, else ``~/.cache/execbench/venvs``."""
    base = os.environ.get("EXECBENCH_CACHE")
    if base:
        return Path(base) / "venvs"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "execbench" / "venvs"


def declared(root: Path, warn: Callable[[str], None]) -> list[str]:
    """The project's declared requirements, each once, in the order found."""
    found: list[str] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            found += _from_pyproject(tomllib.loads(pyproject.read_text(encoding="utf-8")))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, TypeError) as exc:
            warn(f"pyproject.toml not read: {exc}")
    setup_cfg = root / "setup.cfg"
    if setup_cfg.is_file():
        found += _from_setup_cfg(setup_cfg, warn)
    for name in REQUIREMENT_FILES:
        if (root / name).is_file():
            found += _from_requirements(root, root / name, warn, set())
    if not found and (root / "setup.py").is_file():
        warn("its dependencies are declared, if at all, in setup.py, which is not run: "
             "nothing installed")
    return list(dict.fromkeys(found))


def _from_pyproject(data: dict) -> list[str]:
    project = data.get("project", {})
    found = [*project.get("dependencies", [])]
    extras = project.get("optional-dependencies", {})
    for group in GROUPS:
        found += extras.get(group, [])
    groups = data.get("dependency-groups", {})
    for group in GROUPS:
        found += _group(groups, group, set())
    return [entry for entry in found if isinstance(entry, str)]


def _group(groups: dict, name: str, seen: set[str]) -> list[str]:
    """A PEP 735 group, its ``{include-group = ...}`` entries expanded (once each)."""
    if name in seen:
        return []
    seen.add(name)
    found: list[str] = []
    for entry in groups.get(name, []):
        if isinstance(entry, str):
            found.append(entry)
        elif isinstance(entry, dict) and isinstance(entry.get("include-group"), str):
            found += _group(groups, entry["include-group"], seen)
    return found


def _from_setup_cfg(path: Path, warn: Callable[[str], None]) -> list[str]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as exc:
        warn(f"setup.cfg not read: {exc}")
        return []
    lines = parser.get("options", "install_requires", fallback="").splitlines()
    for group in GROUPS:
        lines += parser.get("options.extras_require", group, fallback="").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def _from_requirements(root: Path, path: Path, warn: Callable[[str], None],
                       seen: set[Path]) -> list[str]:
    """A requirements file's requirements; ``-r``/``-c`` includes inside the project are
    followed, other options (an index, an editable install) are left out with a warning."""
    path = path.resolve()
    if path in seen or not path.is_relative_to(root.resolve()):
        return []
    seen.add(path)
    found: list[str] = []
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("-r ", "--requirement ")):
            included = path.parent / line.split(None, 1)[1].strip()
            if included.is_file():
                found += _from_requirements(root, included, warn, seen)
            continue
        if line.startswith("-"):
            warn(f"{path.relative_to(root.resolve())}: {line!r} left out (only "
                 "requirements are installed)")
            continue
        found.append(line)
    return found


def environment(root: Path, python: str, pip_args: tuple[str, ...],
                warn: Callable[[str], None]) -> str:
    """The interpreter to run ``root``'s tests with: that of a cached environment holding
    its declared requirements, made now if missing; ``python`` itself when it declares
    none. ``HarvestError`` when the environment cannot be made (pip's last words)."""
    requirements = declared(root, warn)
    if not requirements:
        return python
    base = os.path.abspath(shutil.which(python) or python)  # a venv's own, not its base's
    digest = hashlib.sha256(json.dumps([base, sorted(requirements), list(pip_args)])
                            .encode()).hexdigest()[:20]
    folder = cache_folder() / digest
    ready = folder / "bin" / "python"
    if (folder / READY).is_file() and ready.exists():
        return str(ready)
    folder.parent.mkdir(parents=True, exist_ok=True)
    making = folder.with_name(f"{digest}.{os.getpid()}.making")
    shutil.rmtree(making, ignore_errors=True)
    try:
        _make(base, making, requirements, pip_args)
        (making / READY).write_text(json.dumps(requirements) + "\n")
        try:
            making.rename(folder)
        except OSError:  # made meanwhile by another harvest: theirs is used
            shutil.rmtree(making, ignore_errors=True)
    finally:
        if making.exists():
            shutil.rmtree(making, ignore_errors=True)
    if not (folder / READY).is_file():
        raise HarvestError(f"the environment {folder} was not completed")
    return str(ready)


_SITE_DIRS = ("import json, sys; print(json.dumps([p for p in sys.path "
              "if p.endswith(('site-packages', 'dist-packages'))]))")
_PURELIB = "import sysconfig; print(sysconfig.get_paths()['purelib'])"


def _make(python: str, folder: Path, requirements: list[str], pip_args: tuple[str, ...]
          ) -> None:
    """A venv whose own packages come first and ``python``'s site folders after (a
    ``.pth`` file adds them, their own ``.pth`` files included: ``--system-site-packages``
    would give the base installation's, not those of a virtual environment ``python`` may
    be), then pip's install."""
    base_sites = json.loads(_step([python, "-c", _SITE_DIRS]))
    _step([python, "-m", "venv", str(folder)])
    own = folder / "bin" / "python"
    purelib = Path(_step([str(own), "-c", _PURELIB]).strip())
    (purelib / "_execbench_base.pth").write_text(
        "".join(f"import site; site.addsitedir({site!r})\n" for site in base_sites))
    _step([str(own), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
           "--no-input", "--only-binary=:all:", *pip_args, *requirements])


def _step(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=INSTALL_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HarvestError(f"installing its test dependencies failed: {exc}") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise HarvestError("installing its test dependencies failed: "
                           f"{said[-1] if said else f'exit {done.returncode}'}")
    return done.stdout
