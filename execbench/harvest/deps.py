"""``execbench harvest --install-deps``: a virtual environment per project holding the test
dependencies it declares, so that its tests import what they need.

What counts as declared, read as text (nothing of the project runs) with ``safe_read``
(no link followed, nothing other users could not read): ``pyproject.toml``'s
``project.dependencies``, its ``project.optional-dependencies`` and ``dependency-groups``
named ``test``, ``tests``, ``testing`` or ``dev``; ``setup.cfg``'s ``install_requires``
and the same extras; and requirements files (``requirements.txt``,
``requirements-test.txt``, ``test-requirements.txt``, ``requirements-dev.txt``,
``requirements/test.txt``, ``tests/requirements.txt``), read as pip reads them (a
backslash continues a line, ``#`` starts a comment), their ``-r`` includes followed inside
the project by this module itself. A ``setup.py`` is never run: a project that declares its
dependencies only there gets a warning and no environment.

The project's author chooses every one of those entries, so each is parsed with
``packaging`` and only a plain requirement (``name[extras] specifiers; markers``) reaches
pip, written anew from the parse. Everything else is left out with a one-line warning
naming the file and the entry, and a count at the end; the rest is installed and the tests
run without what was left out: a direct reference (``name @ URL``, ``name @ file://...``),
a path or URL, a name that pip would take for an archive file, arbitrary equality
(``name===TEXT``, whose text pip reads as a path when it holds a ``/``) and any version
holding ``/``, ``\\`` or ``:``, an editable install, an entry that does not parse, and
every pip option (``--index-url``, ``--no-binary``, ``-c``, ...). A requirements file's
per-requirement options (``--hash``) are dropped: hashes a project gives are its own claim
and guard nothing against it. Includes (``-r`` files inside the project, PEP 735
``include-group`` entries) are followed with a stack of their own, ``MAX_INCLUDE_DEPTH``
deep and ``MAX_INCLUDED_FILES`` files at most (one further is an entry refused), and a
file too deeply nested for ``tomllib`` is not read, with a warning.

The environment is made from the interpreter the harvest runs (``--python``) with its
site folders visible after its own (pytest and what the user has installed stay
importable; what the project needs comes first); that interpreter's own pip runs there
(``ensurepip`` puts one in when it has none). It is kept in a cache folder, named by a
digest of the interpreter, the requirements and the pip arguments, and reused by every
later harvest that needs the same; it is made under a temporary name and renamed when
complete, so a half-made one is never used. The steps that make it run as the invoking
user (asking the interpreter about itself, ``python -m venv``), so each runs isolated
(``-I``, ``PYTHONSAFEPATH``) in an empty folder of its own: a harvest started from inside
the project (``cd project && execbench harvest .``) never imports the project's own
``json.py`` or ``venv/``.

How pip runs: inside ``jail``, with the host's network (it needs the
index) but every other layer: PID, mount and IPC namespaces, the unprivileged user
(``nobody``, who owns the environment while pip writes it; as root, the install fails
rather than run pip as root), Landlock (writes only in the environment and its temp
folder; reads only of the interpreter, the system and the paths ``--pip-args`` names), and
seccomp; its environment holds only ``confine.ENV_ALLOWED`` and pip is ``--isolated``
(neither ``PIP_*`` variables nor the user's pip configuration are read). Its command line
is pip's options, the user's ``--pip-args``, ``--only-binary=:all:`` after them (so no
``--no-binary`` overrides it), ``--`` and the requirements. Wheels only, so no package's
build code runs at install; and before pip starts, a Landlock layer of its own forbids it
to start any program, so the one source build wheels-only lets through (a direct reference
in a wheel's own metadata) fails instead of running. The environment is handed back to
the invoking user when complete. Its interpreter never runs outside the jail once pip has
written to it: a wheel's ``.pth`` file or ``sitecustomize`` runs whenever it starts
(``query_interpreter`` says whom to ask instead).
"""

from __future__ import annotations

import configparser
import contextlib
import hashlib
import json
import os
import posixpath
import re
import shutil
import stat
import subprocess
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

from packaging.requirements import InvalidRequirement, Requirement

from execbench.harvest import jail
from execbench.harvest.options import HarvestError
from execbench.safe_read import Tree
from execbench.sandbox import confine
from execbench.sandbox.process_group import stop_group

GROUPS = ("test", "tests", "testing", "dev")
REQUIREMENT_FILES = ("requirements.txt", "requirements-test.txt", "test-requirements.txt",
                     "requirements_test.txt", "requirements-dev.txt", "requirements/test.txt",
                     "tests/requirements.txt")
READY = ".execbench-ready"
INSTALL_SECONDS = 1800.0
MAX_DECLARING_BYTES = 1 << 20
"""A file that declares dependencies is read up to this size; a larger one is left out."""
MAX_INCLUDE_DEPTH = 16
"""Includes followed one inside another (``-r`` files, ``include-group`` entries); a deeper
one is an entry refused. Real projects nest two or three."""
MAX_INCLUDED_FILES = 64
"""Requirement files one project's includes may read in all; a further include is an entry
refused."""
MAX_WHEEL_FILE_BYTES = 1 << 35
"""The largest file pip may write in its jail (a download, an installed library)."""
_LAYOUT = 2
"""Part of the cache key: environments made before pip ran jailed are made anew."""

OPTION = "a pip option: a project's files never give pip options"
EDITABLE = "an editable install, which pip would build from source"
DIRECT = "a direct reference (a URL or a path), which pip would build from source"
PATH = "a path or URL, which pip would build from source"
FILE_NAME = "a file name, which pip would take for a path"
OUTSIDE = "an include outside the project"
TOO_DEEP = f"an include nested more than {MAX_INCLUDE_DEPTH} deep"
TOO_MANY = f"an include past the first {MAX_INCLUDED_FILES} requirement files"
ARBITRARY = "arbitrary equality (===), any text for a version, which pip may read as a path"
_ARCHIVES = (".whl", ".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz", ".tar.xz", ".txz",
             ".tlz", ".tar.lz", ".tar.lzma")
"""What pip takes a name ending so for: an archive file, built from source if not a wheel."""
_COMMENT = re.compile(r"(?:^|\s)#.*")
_SHOWN = 200
"""An entry is named in a warning up to this many characters."""

Warn = Callable[[str], None]


def cache_folder() -> Path:
    """Where the environments are kept: ``$EXECBENCH_CACHE/venvs``, else
    ``$XDG_CACHE_HOME/execbench/venvs``, else ``~/.cache/execbench/venvs``."""
    base = os.environ.get("EXECBENCH_CACHE")
    if base:
        return Path(base) / "venvs"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "execbench" / "venvs"


# --------------------------------------------------------------------------- declared


def declared(root: Path, warn: Warn) -> list[str]:
    """The project's declared requirements that pip may install (each once, in the order
    found, as ``packaging`` writes them); every other entry named in a warning, and
    counted in a last one."""
    kept: list[str] = []
    refused = 0
    with Tree(root) as tree:
        entries = _entries(tree, warn)
        for source, entry, refused_already in entries:
            requirement, why = ("", refused_already) if refused_already \
                else plain_requirement(entry)
            if why:
                refused += 1
                warn(f"{source}: {_shown(entry)} not installed: {why}")
            elif requirement not in kept:
                kept.append(requirement)
        if not entries and tree.exists("setup.py"):
            warn("its dependencies are declared, if at all, in setup.py, which is not run: "
                 "nothing installed")
    if refused:
        warn(f"{refused} declared {'entry' if refused == 1 else 'entries'} not installed "
             "(each named above)")
    return kept


def plain_requirement(entry: str) -> tuple[str, str]:
    """``entry`` as pip will be given it (``packaging``'s writing of its parse) when it is a
    plain requirement that pip installs by name; else ``""`` and why not."""
    entry = entry.strip()
    if entry.startswith(("-e", "--editable")):
        return "", EDITABLE
    if entry.startswith("-"):
        return "", OPTION
    try:
        requirement = Requirement(entry)
    except InvalidRequirement as exc:
        if entry.startswith((".", "/", "~")) or any(c in entry for c in "/\\:"):
            return "", PATH
        return "", f"not a requirement ({str(exc).splitlines()[0]})"
    if requirement.url:
        return "", DIRECT
    if requirement.name.lower().endswith(_ARCHIVES):
        return "", FILE_NAME
    versions = str(requirement.specifier)
    if "===" in versions or any(c in versions for c in "/\\:"):  # the latter only ===
        return "", ARBITRARY  # allows today; a looser packaging must not let one through
    return str(requirement), ""


def _shown(entry: str) -> str:
    """An entry as a warning names it: quoted, on one line, cut if long."""
    return repr(entry if len(entry) <= _SHOWN else entry[:_SHOWN] + "...")


def _entries(tree: Tree, warn: Warn) -> list[tuple[str, str, str]]:
    """Every entry the project declares: (its file, the entry, why it is refused already
    or ``""``)."""
    found: list[tuple[str, str, str]] = []
    for name, read in (("pyproject.toml", _from_pyproject), ("setup.cfg", _from_setup_cfg)):
        if tree.exists(name):
            try:
                found += [(name, entry, why) for entry, why in read(_text(tree, name))]
            except (OSError, ValueError, configparser.Error) as exc:
                warn(f"{name} not read: {_one_line(exc)}")
            except (RecursionError, MemoryError) as exc:  # tomllib recurses per nesting
                warn(f"{name} not read: {_TOO_MUCH[type(exc)]} ({type(exc).__name__})")
    seen: set[str] = set()
    for name in REQUIREMENT_FILES:
        if tree.exists(name):
            try:
                found += _from_requirements(tree, name, seen)
            except (OSError, ValueError) as exc:
                warn(f"{name} not read: {_one_line(exc)}")
    return found


def _text(tree: Tree, relative: str) -> str:
    return tree.read(relative, MAX_DECLARING_BYTES).decode("utf-8")


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


_TOO_MUCH = {RecursionError: "nested too deeply", MemoryError: "too large to read"}


def _from_pyproject(text: str) -> list[tuple[str, str]]:
    """The entries ``pyproject.toml`` declares, each with why it is refused already (an
    include nested too deep) or ``""``."""
    data = tomllib.loads(text)
    project = _table(data.get("project"))
    found = [(entry, "") for entry in _strings(project.get("dependencies"))]
    extras = _table(project.get("optional-dependencies"))
    groups = _table(data.get("dependency-groups"))
    for group in GROUPS:
        found += [(entry, "") for entry in _strings(extras.get(group))]
        found += _group(groups, group)
    return found


def _table(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> list[str]:
    return [entry for entry in value if isinstance(entry, str)] \
        if isinstance(value, list) else []


def _group(groups: dict, name: str) -> list[tuple[str, str]]:
    """A PEP 735 group's entries, its ``{include-group = ...}`` entries expanded in place
    (each group once), walked with a stack of its own: an include nested deeper than
    ``MAX_INCLUDE_DEPTH`` is an entry refused, never a deeper call."""
    found: list[tuple[str, str]] = []
    seen = {name}
    pending = [iter(_members(groups, name))]
    while pending:
        entry = next(pending[-1], None)
        if entry is None:
            pending.pop()
        elif isinstance(entry, str):
            found.append((entry, ""))
        elif isinstance(entry, dict) and isinstance(entry.get("include-group"), str):
            included = entry["include-group"]
            if len(pending) > MAX_INCLUDE_DEPTH:
                found.append((f'{{include-group = "{included}"}}', TOO_DEEP))
            elif included not in seen:
                seen.add(included)
                pending.append(iter(_members(groups, included)))
    return found


def _members(groups: dict, name: str) -> list[Any]:
    group = groups.get(name)
    return group if isinstance(group, list) else []


def _from_setup_cfg(text: str) -> list[tuple[str, str]]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    lines = parser.get("options", "install_requires", fallback="").splitlines()
    for group in GROUPS:
        lines += parser.get("options.extras_require", group, fallback="").splitlines()
    return [(line.strip(), "") for line in lines
            if line.strip() and not line.strip().startswith("#")]


def _from_requirements(tree: Tree, relative: str, seen: set[str]
                       ) -> list[tuple[str, str, str]]:
    """A requirements file's entries (see ``_entries``); an ``-r`` include inside the project
    is read in its place (once, within ``MAX_INCLUDE_DEPTH`` and ``MAX_INCLUDED_FILES``:
    the files being read are a stack of their own, never deeper calls), every other option
    is an entry refused. ``seen``: the files read already, shared by a project's files."""
    if relative in seen:
        return []
    pending = [(relative, _lines(_text(tree, relative)))]
    seen.add(relative)
    found: list[tuple[str, str, str]] = []
    while pending:
        current, lines = pending[-1]
        line = next(lines, None)
        if line is None:
            pending.pop()
        elif not line.startswith("-"):
            found.append((current, _without_options(line), ""))
        elif (included := _included(line)) is None:
            found.append((current, line, plain_requirement(line)[1]))
        else:
            target = posixpath.normpath(posixpath.join(posixpath.dirname(current), included))
            why = _include_refused(target, len(pending), seen)
            if why is None:
                try:
                    pending.append((target, _lines(_text(tree, target))))
                    seen.add(target)
                except (OSError, ValueError) as exc:
                    why = f"not read: {_one_line(exc)}"
            if why:
                found.append((current, line, why))
    return found


def _include_refused(target: str, depth: int, seen: set[str]) -> str | None:
    """Why an include of ``target`` from ``depth`` files down is an entry refused; ``""``
    when it was read already (nothing to do), None when it is to be read."""
    if target == ".." or target.startswith(("../", "/")):
        return OUTSIDE
    if target in seen:
        return ""
    if depth > MAX_INCLUDE_DEPTH:
        return TOO_DEEP
    if len(seen) >= MAX_INCLUDED_FILES:
        return TOO_MANY
    return None


def _lines(text: str) -> Iterator[str]:
    """A requirements file's lines as pip reads them: one ending in a backslash goes on on
    the next; a ``#`` at the start or after a blank starts a comment."""
    held: list[str] = []
    for raw in text.splitlines():
        comment = raw.lstrip().startswith("#")
        if raw.endswith("\\") and not comment:
            held.append(raw[:-1])
            continue
        line = _COMMENT.sub("", "".join(held) + (" " if comment else "") + raw).strip()
        held = []
        if line:
            yield line
    if held and (line := _COMMENT.sub("", "".join(held)).strip()):
        yield line


def _without_options(line: str) -> str:
    """A requirement line without the options that may follow it (``--hash``, as pip
    splits them: from the first word that begins with ``-``)."""
    words = line.split()
    cut = next((i for i, word in enumerate(words) if word.startswith("-")), len(words))
    return " ".join(words[:cut])


def _included(line: str) -> str | None:
    """The file an ``-r``/``--requirement`` line includes; None for another option."""
    for flag in ("--requirement", "-r"):
        if line.startswith(flag):
            name = line[len(flag):].lstrip(" \t=")
            return name or None
    return None


# --------------------------------------------------------------------------- environment


def environment(root: Path, python: str, pip_args: tuple[str, ...], warn: Warn) -> str:
    """The interpreter to run ``root``'s tests with: that of a cached environment holding
    its declared requirements, made now if missing; ``python`` itself when it declares
    none. ``HarvestError`` when the environment cannot be made (pip's last words)."""
    requirements = declared(root, warn)
    if not requirements:
        return python
    base = os.path.abspath(shutil.which(python) or python)  # a venv's own, not its base's
    args, named = _user_paths(pip_args)
    digest = hashlib.sha256(json.dumps([_LAYOUT, base, sorted(requirements), list(args)])
                            .encode()).hexdigest()[:20]
    folder = cache_folder() / digest
    ready = folder / "bin" / "python"
    if (folder / READY).is_file() and ready.exists():
        return str(ready)
    folder.parent.mkdir(parents=True, exist_ok=True)
    making = folder.with_name(f"{digest}.{os.getpid()}.making")
    shutil.rmtree(making, ignore_errors=True)
    try:
        _make(base, making, requirements, args, named, warn)
        _write_new(making / READY, json.dumps({"base": base, "requirements": requirements}))
        with contextlib.suppress(OSError):  # made meanwhile by another harvest: theirs is used
            making.rename(folder)
    finally:
        shutil.rmtree(making, ignore_errors=True)
    if not (folder / READY).is_file():
        raise HarvestError(f"the environment {folder} was not completed")
    return str(ready)


def query_interpreter(python: str) -> tuple[str, list[str]]:
    """Whom to ask, outside the jail, where ``python`` reads from, and what to add to the
    answer. For an environment made here: its base interpreter, the user's own, and the
    environment's folder; never its own interpreter, which would run the start-up code
    (``.pth`` files, ``sitecustomize``) of wheels from the index. Else ``python``."""
    folder = Path(python).parent.parent
    try:
        base = json.loads((folder / READY).read_text())["base"]
    except (OSError, ValueError, KeyError, TypeError):
        return python, []
    return (base, [str(folder)]) if isinstance(base, str) else (python, [])


_BASE = ("import importlib.util, json, os, sys\n"
         "sites = [p for p in sys.path if p.endswith(('site-packages', 'dist-packages'))]\n"
         "pip = importlib.util.find_spec('pip')\n"
         "folder = pip and pip.origin and os.path.dirname(os.path.dirname(pip.origin))\n"
         "print(json.dumps({'sites': sites, 'pip': folder in sites, 'paths': [sys.prefix, "
         "sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, "
         "os.path.dirname(os.path.realpath(sys.executable)), *sys.path]}))")
_PURELIB = "import sysconfig; print(sysconfig.get_paths()['purelib'])"


def _make(python: str, folder: Path, requirements: list[str], args: tuple[str, ...],
          named: list[str], warn: Warn) -> None:
    """A venv whose own packages come first and ``python``'s site folders after (a
    ``.pth`` file adds them, their own ``.pth`` files included: ``--system-site-packages``
    would give the base installation's, not those of a virtual environment ``python`` may
    be), then pip's install in the jail. Everything run here as the invoking user comes
    before pip writes a byte."""
    base = json.loads(_step([python, "-I", "-c", _BASE]).strip().splitlines()[-1])
    _step([python, "-I", "-m", "venv", *(["--without-pip"] if base["pip"] else []),
           str(folder)])
    own = folder / "bin" / "python"
    purelib = Path(_step([str(own), "-I", "-c", _PURELIB]).strip())
    (purelib / "_execbench_base.pth").write_text(
        "".join(f"import site; site.addsitedir({site!r})\n" for site in base["sites"]))
    interpreter = _identity(own)
    _install(own, folder, requirements, args, [*base["paths"], *named], warn)
    if _identity(own) != interpreter:  # a build could, where nothing forbade it to run
        raise HarvestError("installing its test dependencies failed: the environment's "
                           "interpreter was replaced")


def _identity(path: Path) -> tuple[int, ...]:
    """What changes when a file (or the link it is) is replaced or rewritten."""
    found = os.lstat(path)
    return found.st_dev, found.st_ino, found.st_mtime_ns, found.st_size


_PIP = """import ctypes, errno, os, runpy, sys
libc = ctypes.CDLL(None, use_errno=True)
handled = ctypes.c_uint64(1)  # LANDLOCK_ACCESS_FS_EXECUTE, and no rule grants it
ruleset = libc.syscall(444, ctypes.byref(handled), ctypes.c_size_t(8), ctypes.c_uint32(0))
if ruleset < 0 and ctypes.get_errno() not in (errno.ENOSYS, errno.EOPNOTSUPP):
    sys.exit("pip may not start programs: " + os.strerror(ctypes.get_errno()))
if ruleset >= 0 and (libc.prctl(38, 1, 0, 0, 0) or libc.syscall(446, ruleset, 0)):
    sys.exit("pip may not start programs: " + os.strerror(ctypes.get_errno()))
sys.argv[0] = "pip"
runpy.run_module("pip", run_name="__main__", alter_sys=True)
"""
"""pip's start in its jail: a Landlock layer that forbids starting any program (a build
backend, git, a compiler) first, where the kernel has Landlock; then pip itself."""
_PIP_OPTIONS = ("install", "--isolated", "--quiet", "--disable-pip-version-check",
                "--no-input", "--no-cache-dir")
_SYSTEM_READ = ("/etc",)
"""What pip reads of the system beside ``landlock.READABLE_SYSTEM_PATHS``: certificates,
name resolution, ``/etc/pip.conf``."""


def _install(own: Path, venv: Path, requirements: list[str], args: tuple[str, ...],
             readable: list[str], warn: Warn) -> None:
    """pip installs ``requirements`` into ``venv`` in the jail (see the module doc); a
    ``HarvestError`` with pip's last line when it fails."""
    temp = venv / ".pip-temp"  # on disk: a download may be larger than a tmpfs should
    temp.mkdir()
    with tempfile.TemporaryDirectory(prefix="execbench-pip-") as scratch:
        root = Path(scratch)
        for name in ("home", "tmp"):
            (root / name).mkdir()
        env = {**confine.scrubbed_environment(os.environ), "HOME": str(root / "home"),
               "TMPDIR": str(temp)}
        resolv = os.path.realpath("/etc/resolv.conf")
        config = {"scratch": scratch, "project": str(venv), "home": str(root / "home"),
                  "tmp": str(root / "tmp"), "network": True, "unprivileged": True,
                  "read": _existing([str(venv), *readable, *_SYSTEM_READ, resolv]),
                  "argv": [str(own), "-I", "-c", _PIP, *_PIP_OPTIONS, *args,
                           "--only-binary=:all:", "--", *requirements],
                  "env": env, "max_file_bytes": MAX_WHEEL_FILE_BYTES,
                  "max_temp_bytes": 64 << 20}
        log_path = root / "pip.log"
        with open(log_path, "wb") as log:
            process, channel = jail.start(config, None, root, log)
            timed_out = False
            try:
                process.wait(INSTALL_SECONDS)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                stop_group(process, 1.0)
        report = _first_record(channel)
        said = log_path.read_text(errors="replace").strip().splitlines()
    errors = [line for line in said if line.startswith("ERROR:")]  # pip's own, not its hints
    last = (errors or said or [f"exit {process.returncode}"])[-1].removeprefix("ERROR: ")
    if report is None:
        raise HarvestError(f"pip's jail did not start: {last}")
    _warn_layers(report.get("layers", {}), warn)
    if timed_out or process.returncode != 0:
        raise HarvestError("installing its test dependencies failed: "
                           + (f"over {INSTALL_SECONDS:.0f} s" if timed_out else last))
    shutil.rmtree(temp)
    _hand_back(venv)


def _first_record(channel: int) -> dict | None:
    """The jail's layers record, the one line its runner writes before pip starts."""
    os.set_blocking(channel, True)
    with os.fdopen(channel, "rb") as pipe:
        first = pipe.readline()
    try:
        report = json.loads(first)
    except ValueError:
        return None
    return report if isinstance(report, dict) else None


def _warn_layers(layers: dict[str, str], warn: Warn) -> None:
    """A warning for each layer pip ran without (the network is off by design)."""
    for name in ("namespaces", "user", "landlock", "seccomp"):
        line = layers.get(name, "off")
        if line.startswith("off"):
            warn(f"pip ran without its jail's {name} layer ({line})")


def _hand_back(venv: Path) -> None:
    """The environment back to the invoking user, so that nothing running as the jail's
    user later (a project's tests, a runner) can change it; ``lchown`` never follows a link
    pip left, and the kernel clears set-user-ID bits on the way."""
    uid, gid = os.geteuid(), os.getegid()
    for parent, folders, files in os.walk(venv):
        for name in (parent, *(os.path.join(parent, n) for n in folders + files)):
            os.lchown(name, uid, gid)


def _write_new(path: Path, text: str) -> None:
    """Write ``path`` as a new file, never through a link someone put in its place."""
    if path.is_symlink() or path.exists():
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with open(fd, "w", encoding="utf-8") as handle:
        handle.write(text + "\n")


def _existing(paths: list[str]) -> list[str]:
    kept: list[str] = []
    for path in paths:
        real = os.path.realpath(path) if path else ""
        if real not in ("", "/") and os.path.exists(real) and real not in kept:
            kept.append(real)
    return kept


_PATH_OPTIONS = ("-f", "--find-links", "-i", "--index-url", "--extra-index-url", "-c",
                 "--constraint", "-r", "--requirement", "--cert", "--client-cert")
"""pip options whose value may be a local path: pip's jail may read what they name."""


def _user_paths(args: tuple[str, ...]) -> tuple[tuple[str, ...], list[str]]:
    """The user's pip arguments, a relative path given to a path option made absolute (pip
    runs elsewhere), and the local paths those options name; ``HarvestError`` for one the
    jail's user could not read."""
    given: list[str] = []
    named: list[str] = []
    wanted = False
    for arg in args:
        flag, equals, value = arg.partition("=")
        if wanted:
            arg = _local(arg, named)
        elif equals and flag.startswith("--") and flag in _PATH_OPTIONS:
            arg = f"{flag}={_local(value, named)}"
        wanted = not wanted and arg in _PATH_OPTIONS
        given.append(arg)
    return tuple(given), named


def _local(value: str, named: list[str]) -> str:
    """``value`` absolute if it is a local path (and added to ``named``), else as given."""
    is_url = value.startswith("file:")
    path = url2pathname(urlsplit(value).path) if is_url else value
    if not path or "://" in path or not os.path.exists(path):
        return value
    real = os.path.realpath(path)
    if confine.unprivileged_user() is not None and not _others_may_read(real):
        raise HarvestError(f"--pip-args names {value}, which other users may not read: pip "
                           "runs as an unprivileged user")
    named.append(real)
    return value if is_url else os.path.abspath(path)


def _others_may_read(path: str) -> bool:
    mode = os.stat(path).st_mode
    need = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
    return mode & need == need


def _step(command: list[str]) -> str:
    """A step run as the invoking user, with the user's own interpreter, before pip writes
    anything into the environment. It may be run from inside the project (``cd project &&
    execbench harvest .``), whose ``json.py`` or ``venv/`` would come first on ``sys.path``:
    so ``-I`` (no script folder, no user site, no ``PYTHON*`` variables), ``PYTHONSAFEPATH``
    for good measure, and an empty folder of its own to run in (for a relative entry of
    ``PYTHONPATH``, and interpreters that know neither)."""
    env = {**os.environ, "PYTHONSAFEPATH": "1"}
    try:
        with tempfile.TemporaryDirectory(prefix="execbench-step-") as empty:
            done = subprocess.run(command, capture_output=True, text=True, cwd=empty,
                                  env=env, stdin=subprocess.DEVNULL,
                                  timeout=INSTALL_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HarvestError(f"installing its test dependencies failed: {exc}") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise HarvestError("installing its test dependencies failed: "
                           f"{said[-1] if said else f'exit {done.returncode}'}")
    return done.stdout
