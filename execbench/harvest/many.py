"""``execbench harvest`` over many projects: each harvested on its own, the results kept per
project and merged, a run that stops resumed where it stopped.

A project is a folder or a source archive (``.tar.gz``, ``.tgz``, ``.tar``, ``.zip``)
holding one. Each is harvested by ``project.harvest`` (its own jail, its own time limits),
here or as a Ray task (``executors``: the project's files shipped, the result written here),
and its outcome written as two files under ``OUT/projects/``: ``NAME.jsonl`` (its records,
each ``id`` prefixed with ``NAME:`` so that ids stay unique once merged) and ``NAME.json``
(its summary, and the key below). ``OUT/harvest.jsonl`` joins the records of the projects
that were harvested, in the order the projects were given, so the same projects and
settings give the same bytes whatever order they finished in.

The key is a digest of the settings (``HarvestOptions``), of what the interpreter has
installed (``installed``) and of the project's bytes (the archive's, or every file a
harvest copies from the folder): a project whose summary holds the same key and no error
is not harvested again. A project whose harvest fails (it cannot be unpacked, its tests
cannot start or did not run: ``failures``) gets a summary with the error, pytest's error
lines and a hint, and no records; the others go on, and the next run tries it again.
pytest's whole output is kept as ``NAME.pytest.log`` beside, whatever became of the project.

A project may also be a package on the index (``package_projects``): its release is chosen
here (``releases``), its key made of the releases' sha256 (a resumed run downloads
nothing it has), and it is downloaded, checked and unpacked where its harvest runs
(``index``), so a Ray node fetches its own. Its functions are dated by the release and,
with ``--new-since``, kept only when new or changed (``ages``); folders with
``--changed-since`` are dated by their commits (``history``). A package that cannot be
found, downloaded, unpacked or tested fails alone, as any project does.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import stat
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import execbench.import_guard  # noqa: F401 - first: a folder hiding the package, in one line
from execbench import __version__
from execbench.executors import LOCAL, ExecutorChoice, run_units
from execbench.harvest import history, index
from execbench.harvest.ages import STATES, Dating, SinceRelease
from execbench.harvest.failures import TestsNotRun
from execbench.harvest.installed import NOT_ASKED, distributions_digest
from execbench.harvest.options import HarvestError, HarvestOptions, HarvestResult
from execbench.harvest.project import copy_ignored, harvest
from execbench.harvest.releases import Pick, Wanted, pick
from execbench.safe_read import FOLDER, LINK, Refused, Tree

ARCHIVES = (".tar.gz", ".tgz", ".tar", ".zip")
MAX_UNPACKED_BYTES = 256 << 20
"""Bytes an archive's files may add up to (a project's sources and tests are a few MB; the
three shared projects unpack to under 2 MB). A larger project is given as a folder."""
MAX_UNPACKED_FILES = 10_000
"""Files and folders an archive may hold."""
MAX_HEADER_BYTES = 1 << 20
"""Bytes ``tarfile`` may read for one member's headers: its own block and what comes before
it (PAX extended headers, global ones included, GNU long names and links, sparse maps).
``tarfile`` holds them whole in memory, several times over, before any member is seen; real
ones take a few KB (a path, times, owners, extended attributes)."""
MAX_ALL_HEADER_BYTES = 32 << 20
"""The same, for all the members of one archive together (what ``tarfile`` keeps of PAX
headers stays with each member, and global ones with the archive)."""
MAX_HEADER_CHAIN = 8
"""Headers one member may have before its own (each is read by a nested call)."""
SUMMARY_VERSION = 1
_SAID = 300
"""Characters of a library's error message kept in a one-line refusal."""


@dataclass(frozen=True)
class Project:
    name: str
    """Unique among the projects of one run: the folder's name, the archive's without
    its extension, or the package's."""
    path: Path
    release: Pick | None = None
    """A package from the index: the release to harvest (and the one to compare it with),
    downloaded where it is harvested; ``path`` is then its name only."""
    problem: str | None = None
    """Why a package has no release to harvest (not on the index, none after the date):
    its failure, the others going on."""

    @property
    def origin(self) -> str:
        """Where its files come from, as its summary says: a path, or a release's URL."""
        return self.release.release.url if self.release is not None else str(self.path)


@dataclass
class Outcome:
    """What became of one project in this run."""

    project: Project
    state: str
    """``harvested``, ``already harvested`` (a summary with the same key) or ``failed``."""
    summary: dict[str, Any]


def projects_from(paths: list[Path], listing: Path | None = None) -> list[Project]:
    """The projects named on the command line, then those a list file names (a path per
    line, relative to the file's folder; blank lines and ``#`` comments skipped)."""
    given = list(paths)
    if listing is not None:
        try:
            lines = listing.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise HarvestError(f"cannot read the project list {listing}: {exc.strerror}") \
                from exc
        given += [listing.parent / line.strip() for line in lines
                  if line.strip() and not line.lstrip().startswith("#")]
    if not given:
        raise HarvestError("no project given: name folders or archives, or --projects FILE, "
                           "or packages with --package NAME")
    projects: list[Project] = []
    names: dict[str, Path] = {}
    for path in given:
        if not path.exists():
            raise HarvestError(f"no such project folder or archive: {path}")
        if not path.is_dir() and not path.name.endswith(ARCHIVES):
            raise HarvestError(f"{path} is neither a folder nor an archive "
                               f"({', '.join(ARCHIVES)})")
        name = _name(path)
        if name in names:
            raise HarvestError(f"two projects are named {name!r}: {names[name]} and {path}")
        names[name] = path
        projects.append(Project(name, path.resolve()))
    return projects


def _name(path: Path) -> str:
    name = path.resolve().name
    for suffix in ARCHIVES:
        if name.endswith(suffix):
            name = name[:-len(suffix)]
            break
    return name


def project_key(project: Project, options: HarvestOptions, installed: str | None = None,
                dated: str = "") -> str:
    """The digest that says a harvest of ``project`` with ``options``, by an interpreter
    with the ``installed`` distributions (``distributions_digest``; asked if not given),
    is the one on disk: a package's by its releases' digests (``Pick.key``), not
    downloaded again; ``dated`` names a dating by commits (its date and commit)."""
    if installed is None:
        installed = distributions_digest(options.python)
    settings = dataclasses.asdict(options)
    if options.language == "python":  # keys made before compiled languages stay valid
        for name in ("language", "build", "test"):
            del settings[name]
    digest = hashlib.sha256()
    digest.update(json.dumps({"execbench": __version__, "installed": installed, **settings},
                             sort_keys=True, default=str).encode())
    if dated:
        digest.update(b"dated " + dated.encode())
    if project.release is not None:
        digest.update(b"release " + project.release.key().encode())
        return digest.hexdigest()
    for relative, fd in _contents(project.path):
        _add_file(digest, relative, fd)
    return digest.hexdigest()


def package_projects(packages: list[Wanted], since: date | None, at: str) -> list[Project]:
    """Each package as a project: the release ``releases.pick`` chooses from the index
    at ``at``, or why there is none (its failure, said when the others are harvested)."""
    projects = []
    for package in packages:
        try:
            chosen = pick(package, index.releases(package.name, at), since)
        except HarvestError as exc:
            projects.append(Project(package.name, Path(package.name), problem=str(exc)))
        else:
            projects.append(Project(package.name, Path(package.name), release=chosen))
    return projects


def _add_file(digest: Any, name: str, fd: int | None) -> None:
    """A file's name, size and bytes into ``digest`` (``None``: a link, no bytes); the
    descriptor is closed."""
    digest.update(len(name).to_bytes(4, "big") + name.encode())
    if fd is None:
        digest.update(bytes(8))
        return
    with open(fd, "rb") as handle:
        digest.update(os.fstat(fd).st_size.to_bytes(8, "big"))
        while chunk := handle.read(1 << 20):
            digest.update(chunk)


def _contents(path: Path) -> Iterator[tuple[str, int | None]]:
    """The files a harvest reads, by the name they have in it, each opened: an archive
    whole; a folder's files as the scratch copy takes them (``copy_project``: a link by
    its target's name, never followed; what the copy leaves out, left out), sorted."""
    if not path.is_dir():
        yield path.name, os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        return
    with Tree(path) as tree:
        for entry in tree.entries(lambda relative: not copy_ignored(relative)):
            if copy_ignored(entry.relative):
                continue
            if entry.kind == LINK:
                yield f"{entry.relative} -> {tree.link_target(entry.relative)}", None
                continue
            try:
                fd = tree.open(entry.relative)
            except Refused:
                continue
            yield entry.relative, fd


def unpacked(archive: Path, into: Path) -> Path:
    """The project folder an archive holds: its one top folder, or the whole archive when
    it has several entries at the top. It is unpacked here, outside any jail, so only
    plain files and folders are taken, each inside ``into``: an archive with a link, a
    device or a member whose path leaves the folder is refused whole (links are how
    archives have escaped ``tarfile``'s own filter), and so is one whose members add up to
    more than ``MAX_UNPACKED_BYTES`` or ``MAX_UNPACKED_FILES``, from their headers before
    anything is written (``tarfile`` and ``zipfile`` write no more than a header says). A
    tar's headers themselves are read within ``MAX_HEADER_BYTES`` a member,
    ``MAX_HEADER_CHAIN`` headers before one and ``MAX_ALL_HEADER_BYTES`` in all
    (``_BoundedInfo``): past one, the archive is refused whole, in one line."""
    if not archive.name.endswith(".zip") and not hasattr(tarfile, "data_filter"):
        raise HarvestError(f"{archive}: this Python's tarfile cannot unpack safely (3.11.4 "
                           "or later can); unpack it yourself and give the folder")
    into.mkdir()
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as packed:
                infos = packed.infolist()
                _bounded(archive, len(infos), sum(info.file_size for info in infos))
                _inside(archive, into, [info.filename for info in infos])
                packed.extractall(into)
        else:
            with tarfile.open(archive, tarinfo=_BoundedInfo) as packed:
                members = _members(archive, packed)
                odd = next((m.name for m in members if not (m.isfile() or m.isdir())), None)
                if odd is not None:
                    raise HarvestError(f"{archive}: {odd!r} is a link or a device; only "
                                       "files and folders are unpacked")
                _inside(archive, into, [m.name for m in members])
                packed.extractall(into, members=members, filter="data")
    except HarvestError:
        raise
    except _HeadersTooLarge as exc:
        raise HarvestError(f"{archive}: {exc}; unpack it yourself and give the folder") \
            from None
    except Exception as exc:  # noqa: BLE001 - zlib, EOF, encryption: all a bad archive
        raise HarvestError(f"cannot unpack {archive}: {_one_line(exc)}") from exc
    top = list(into.iterdir())
    return top[0] if len(top) == 1 and top[0].is_dir() else into


def _one_line(exc: Exception) -> str:
    """An error a library raised, as a refusal says it: its kind and message on one line
    (``tarfile``'s span lines), cut at ``_SAID`` characters (a long name may be in it)."""
    said = " ".join(f"{type(exc).__name__}: {exc}".split())
    return said if len(said) <= _SAID else said[:_SAID] + "..."


class _HeadersTooLarge(Exception):
    """A member's headers passed a bound; the message says which."""


class _HeaderBudget:
    """``tarfile``'s file object as a member's headers read it: each read while a header is
    processed is counted against ``MAX_HEADER_BYTES`` and ``MAX_ALL_HEADER_BYTES`` and
    refused before it is made once over them; the member's data is read freely."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.depth = 0
        self.member = 0
        self.archive = 0

    def read(self, size: int = -1) -> bytes:
        if self.depth:
            if size < 0 or self.member + size > MAX_HEADER_BYTES:
                raise _HeadersTooLarge("a member's headers (extended headers, long names, "
                                       f"sparse maps) take more than {MAX_HEADER_BYTES} bytes")
            if self.archive + size > MAX_ALL_HEADER_BYTES:
                raise _HeadersTooLarge(f"its headers take more than {MAX_ALL_HEADER_BYTES} "
                                       "bytes in all")
            self.member += size
            self.archive += size
        return self.raw.read(size)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


class _BoundedInfo(tarfile.TarInfo):
    """A member as ``tarfile`` reads it, its headers read through a ``_HeaderBudget``:
    ``fromtarfile`` is where each member's reading starts (and where each header that
    comes before it is read, by a nested call)."""

    @classmethod
    def fromtarfile(cls, packed: tarfile.TarFile) -> _BoundedInfo:
        budget = packed.fileobj
        if not isinstance(budget, _HeaderBudget):
            budget = packed.fileobj = _HeaderBudget(packed.fileobj)
        if budget.depth == 0:
            budget.member = 0
        elif budget.depth > MAX_HEADER_CHAIN:
            raise _HeadersTooLarge(f"a member has more than {MAX_HEADER_CHAIN} headers")
        budget.depth += 1
        try:
            return super().fromtarfile(packed)
        finally:
            budget.depth -= 1


def _members(archive: Path, packed: tarfile.TarFile) -> list[tarfile.TarInfo]:
    """The archive's members, read a header at a time and refused as soon as they pass a
    bound: a stream that unpacks to gigabytes is not read to its end."""
    members: list[tarfile.TarInfo] = []
    size = 0
    for member in packed:
        members.append(member)
        size += member.size
        _bounded(archive, len(members), size)
    return members


def _bounded(archive: Path, count: int, size: int) -> None:
    if count > MAX_UNPACKED_FILES:
        raise HarvestError(f"{archive}: more than {MAX_UNPACKED_FILES} files and folders; "
                           "unpack it yourself and give the folder")
    if size > MAX_UNPACKED_BYTES:
        raise HarvestError(f"{archive}: more than {MAX_UNPACKED_BYTES} bytes once unpacked; "
                           "unpack it yourself and give the folder")


def _inside(archive: Path, into: Path, names: list[str]) -> None:
    base = into.resolve()
    for name in names:
        if os.path.isabs(name) or not (base / name).resolve().is_relative_to(base):
            raise HarvestError(f"{archive}: {name!r} would be written outside the project")


def harvest_projects(projects: list[Project], out: Path, options: HarvestOptions,
                     progress: Callable[[Project, dict[str, Any]], None] | None = None,
                     warn: Callable[[str], None] = lambda message: None,
                     started: Callable[[Project], None] | None = None,
                     executor: ExecutorChoice = LOCAL,
                     finished: Callable[[Outcome], None] | None = None,
                     changed_since: date | None = None) -> list[Outcome]:
    """Harvest each project into ``out`` (see the module doc) on ``executor``; returns what
    became of each, in the order given. ``started`` and ``progress`` (a project's tests as
    they run) are called where the harvest runs in this process; ``finished`` as each
    project's outcome is written, wherever it ran. A package is downloaded where its
    harvest runs; with ``changed_since``, each folder's lines are dated by their commits
    here (``history``), before its harvest is sent anywhere."""
    folder = out / "projects"
    folder.mkdir(parents=True, exist_ok=True)
    outcomes: dict[str, Outcome] = {}
    jobs: list[_Job] = []
    installed = distributions_digest(options.python)
    if installed.startswith(NOT_ASKED):  # no key can vouch for an old harvest: a new one
        warn(f"the installed packages of {options.python} could not be listed "
             f"({installed}): every project is harvested again")
        installed += f" (this run: {os.urandom(16).hex()})"
    for project in projects:
        outcome, key = _already(project, folder, options, installed, changed_since)
        dating = None
        if outcome is None and changed_since is not None and project.release is None:
            try:
                dating = _by_commits(project, changed_since, warn)
            except HarvestError as exc:
                outcome = _failed(project, folder / f"{project.name}.json",
                                  folder / f"{project.name}.jsonl", key, str(exc))
        if outcome is None:
            jobs.append(_Job(project, key, options, dating=dating))
        else:
            outcomes[project.name] = outcome
            if finished is not None:
                finished(outcome)
    units: Iterable[_Job] = jobs
    if executor.name == "local":
        for job in jobs:
            job.started = started
            job.progress = progress
    else:  # each project's files read as its task is about to start, dropped once sent
        units = (_shipped(job) for job in jobs)
    for position, run in run_units(executor, harvest_unit, units,
                                   failed=lambda why: _Run(error=why)):
        job = jobs[position]
        for message in run.warnings:
            warn(f"{job.project.name}: {message}")
        outcomes[job.project.name] = outcome = _record(job, run, folder, warn)
        if finished is not None:
            finished(outcome)
    ordered = [outcomes[project.name] for project in projects]
    _merge(out / "harvest.jsonl", folder, [o for o in ordered if o.state != "failed"])
    return ordered


@dataclass
class _Job:
    """One project's harvest as a unit of work: all it needs, wherever it runs."""

    project: Project
    key: str
    options: HarvestOptions
    payload: tuple[str, bytes] | None = None
    """The project's files as a file name and its bytes (an archive, or the folder packed
    as a tar), when it runs where its path may not exist (Ray); ``None`` to read it from
    its path."""
    error: str | None = None
    """Why it cannot be shipped, said as its failure."""
    started: Callable[[Project], None] | None = None
    progress: Callable[[Project, dict[str, Any]], None] | None = None
    dating: Dating | None = None
    """A folder's lines dated by their commits (``history``), for ``--changed-since``."""


@dataclass
class _Run:
    """A unit's result: the project's records (ids prefixed) and summary, or its error."""

    records: str = ""
    summary: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """pytest's error lines, for a session that did not run its tests."""
    hint: str = ""
    """What to try, for the same."""
    log: bytes = b""
    """pytest's whole output (``failures.keep_log``), when its tests started."""


def _already(project: Project, folder: Path, options: HarvestOptions, installed: str,
             changed_since: date | None) -> tuple[Outcome | None, str]:
    """The outcome of a project that needs no harvest (done with the same key, or not
    readable, or a package without a release), and its key."""
    records, summary_path = folder / f"{project.name}.jsonl", folder / f"{project.name}.json"
    if project.problem is not None:
        return _failed(project, summary_path, records, "", project.problem), ""
    try:
        dated = "" if changed_since is None or project.release is not None else \
            f"changed since {changed_since} at {_commit_of(project)}"
        key = project_key(project, options, installed, dated)
    except HarvestError as exc:
        return _failed(project, summary_path, records, "", str(exc)), ""
    except OSError as exc:
        return _failed(project, summary_path, records, "", f"cannot read it: {exc}"), ""
    old = _read_summary(summary_path)
    if old.get("key") == key and "error" not in old and records.is_file():
        return Outcome(project, "already harvested", old), key
    return None, key


def _by_commits(project: Project, since: date, warn: Callable[[str], None]) -> Dating:
    """A folder's lines dated by their commits, its warnings named by the project."""
    return history.since_commit(project.path, since,
                                lambda message: warn(f"{project.name}: {message}"))


def _commit_of(project: Project) -> str:
    """The commit a folder has checked out (``--changed-since`` takes git checkouts only)."""
    if not project.path.is_dir():
        raise HarvestError(f"{project.path}: --changed-since dates a git checkout's lines; "
                           "an archive has no history")
    return history.head(project.path)


def _shipped(job: _Job) -> _Job:
    """``job`` carrying its project's files, for a node that may not have the driver's:
    the archive's bytes, or the folder packed as a tar (``_packed``); a project that
    cannot be read or packed carries the reason as its error instead."""
    project = job.project
    if project.release is not None:
        return job  # downloaded where it runs
    try:
        payload = (project.path.name, project.path.read_bytes()) if not project.path.is_dir() \
            else (f"{project.name}.tar", _packed(project))
    except (OSError, HarvestError) as exc:
        return dataclasses.replace(job, error=f"cannot ship it to Ray: {exc}")
    return dataclasses.replace(job, payload=payload)


def _packed(project: Project) -> bytes:
    """The folder as the scratch copy takes it (``copy_project``: ``COPY_IGNORED`` and the
    files it would refuse left out, folders kept even when empty), read through
    ``safe_read``, as an uncompressed tar of plain files and folders: a hard link is stored
    as a file of its own (``unpacked`` takes no links), and a symbolic link, which the
    copy would keep as a link, is refused."""
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w") as tar, Tree(project.path) as tree:
        tar.addfile(_member(tar, project, "", os.fstat(tree.fd)))
        for entry in tree.entries(lambda relative: not copy_ignored(relative), folders=True):
            if copy_ignored(entry.relative):
                continue
            if entry.kind == LINK:
                raise HarvestError(f"{entry.relative} is a symbolic link; give the project "
                                   "without it")
            if entry.kind == FOLDER:
                found = os.stat(entry.relative, dir_fd=tree.fd, follow_symlinks=False)
                tar.addfile(_member(tar, project, entry.relative, found))
                continue
            try:
                fd = tree.open(entry.relative)
            except Refused:
                continue
            with open(fd, "rb") as handle:
                tar.addfile(_member(tar, project, entry.relative, os.fstat(fd)), handle)
    return packed.getvalue()


def _member(tar: tarfile.TarFile, project: Project, relative: str, found: os.stat_result
            ) -> tarfile.TarInfo:
    """A folder's or a plain file's header (a hard link as a file of its own)."""
    info = tarfile.TarInfo(str(Path(project.name) / relative))
    info.type = tarfile.DIRTYPE if stat.S_ISDIR(found.st_mode) else tarfile.REGTYPE
    info.mode = stat.S_IMODE(found.st_mode)
    info.mtime = int(found.st_mtime)
    info.size = 0 if info.type == tarfile.DIRTYPE else found.st_size
    return info


def harvest_unit(job: _Job) -> _Run:
    """One project harvested where the executor runs it: unpacked into a scratch folder
    if shipped, harvested in its own jail, its records read back with prefixed ids. Any
    error is this project's (its one-line error), never the end of the others' run."""
    if job.error is not None:
        return _Run(error=job.error)
    if job.started is not None:
        job.started(job.project)
    run = _Run()
    progress, project = job.progress, job.project
    each = None if progress is None else (lambda status: progress(project, status))
    try:
        with tempfile.TemporaryDirectory(prefix="execbench-project-") as scratch:
            source = project.path
            dating = job.dating
            if project.release is not None:
                root, dating = _fetched(project.release, Path(scratch), run.warnings.append)
            else:
                if job.payload is not None:
                    name, data = job.payload
                    source = Path(scratch) / name
                    source.write_bytes(data)
                root = source if source.is_dir() else \
                    unpacked(source, Path(scratch) / "unpacked")
            scratch_out, log = Path(scratch) / "harvest.jsonl", Path(scratch) / "pytest.log"
            try:
                result = harvest(root, scratch_out, job.options, progress=each,
                                 warn=run.warnings.append, log=log, dating=dating)
            finally:
                run.log = log.read_bytes() if log.is_file() else b""
            run.records = _prefixed(scratch_out, project.name)
    except TestsNotRun as exc:
        return _Run(error=str(exc), warnings=run.warnings, errors=exc.errors, hint=exc.hint,
                    log=run.log)
    except (HarvestError, OSError) as exc:
        return _Run(error=str(exc), warnings=run.warnings, log=run.log)
    except Exception as exc:  # noqa: BLE001 - one project's files, however odd, fail it alone
        return _Run(error=_one_line(exc), warnings=run.warnings, log=run.log)
    run.summary = summary_of(result) | _dated_by(project, job.dating)
    return run


def _fetched(chosen: Pick, scratch: Path, warn: Callable[[str], None]
             ) -> tuple[Path, SinceRelease]:
    """A package's release downloaded (its hash checked) and unpacked, and its dating,
    against the earlier release (downloaded and unpacked too) when there is one."""
    downloads = scratch / "downloads"
    downloads.mkdir()
    root = unpacked(index.download(chosen.release, downloads), scratch / "release")
    earlier_root = None
    if chosen.earlier is not None:
        earlier_root = unpacked(index.download(chosen.earlier, downloads), scratch / "earlier")
    return root, SinceRelease.of(chosen.release, chosen.since, chosen.earlier, earlier_root,
                                 warn)


def _dated_by(project: Project, dating: Dating | None) -> dict[str, Any]:
    """What a summary says of where its dates come from: a release (and the one it was
    compared with), or the commit whose history dated the lines."""
    if project.release is not None:
        chosen = project.release
        return {"release": {
            "package": chosen.release.name, "version": chosen.release.version,
            "uploaded": chosen.release.uploaded.isoformat(timespec="seconds"),
            "sha256": chosen.release.sha256,
            "new_since": None if chosen.since is None else chosen.since.isoformat(),
            "compared_with": None if chosen.earlier is None else chosen.earlier.version}}
    if isinstance(dating, history.SinceCommit):
        return {"history": {"commit": dating.head,
                            "changed_since": dating.since.isoformat()}}
    return {}


def _record(job: _Job, run: _Run, folder: Path, warn: Callable[[str], None]) -> Outcome:
    """A unit's result written as its project's files; a pytest log that cannot be written
    where it goes (a folder of that name) is warned about, the outcome stands."""
    project = job.project
    records, summary_path = folder / f"{project.name}.jsonl", folder / f"{project.name}.json"
    log = log_path(folder, project.name)
    try:
        if run.log:
            _write_whole(log, run.log)
        else:
            log.unlink(missing_ok=True)
    except OSError as exc:
        warn(f"{project.name}: pytest's output not kept in {log}: {exc.strerror or exc}")
    if run.error is not None:
        return _failed(project, summary_path, records, job.key, run.error,
                       {"errors": run.errors, "hint": run.hint} if run.hint else {})
    # gone before the records change, so a run stopped in between leaves no summary that
    # could vouch for them
    summary_path.unlink(missing_ok=True)
    _write_whole(records, run.records)
    summary = {"version": SUMMARY_VERSION, "project": project.name,
               "path": project.origin, "key": job.key, **run.summary}
    _write_whole(summary_path, json.dumps(summary, indent=1) + "\n")
    return Outcome(project, "harvested", summary)


def log_path(folder: Path, name: str) -> Path:
    """Where a project's pytest output is kept: a name of its own, so a file of the user's
    beside the records is never taken for it."""
    return folder / f"{name}.pytest.log"


def summary_of(result: HarvestResult) -> dict[str, Any]:
    """What a project's summary file keeps of its harvest."""
    return {"tests": list(result.tests), "pytest_exit": result.pytest_exit,
            "timed_out": result.timed_out, "stopped": result.stopped, "hung": result.hung,
            "functions": dict(result.functions), "calls": dict(result.calls),
            "refused": dict(result.refused), "jail_warnings": result.jail_warnings,
            **({"ages": {state: result.ages[state] for state in STATES}}
               if result.ages else {})}


def _failed(project: Project, summary_path: Path, records: Path, key: str,
            error: str, more: dict[str, Any] | None = None) -> Outcome:
    """A failed project's summary: its error (``more``: pytest's lines and a hint), no
    records, so the next run tries it again."""
    records.unlink(missing_ok=True)
    summary = {"version": SUMMARY_VERSION, "project": project.name,
               "path": project.origin, "key": key, "error": error, **(more or {})}
    _write_whole(summary_path, json.dumps(summary, indent=1) + "\n")
    return Outcome(project, "failed", summary)


def _write_whole(path: Path, text: str | bytes) -> None:
    """``text`` in ``path`` whole or not at all: a run stopped here leaves no half file."""
    partial = path.with_name(path.name + ".part")
    partial.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    partial.replace(path)


def _read_summary(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) and found.get("version") == SUMMARY_VERSION \
        else {}


def _prefixed(source: Path, name: str) -> str:
    """``source``'s records with ids made unique across projects."""
    lines = []
    for line in source.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        record["id"] = f"{name}:{record['id']}"
        record["meta"] = {**record.get("meta", {}), "project": name}
        lines.append(json.dumps(record) + "\n")
    return "".join(lines)


def _merge(target: Path, folder: Path, outcomes: list[Outcome]) -> None:
    """The projects' records joined, a project at a time (many projects need not fit in
    memory at once), and put in place whole."""
    partial = target.with_name(target.name + ".part")
    with open(partial, "wb") as merged:
        for outcome in outcomes:
            merged.write((folder / f"{outcome.project.name}.jsonl").read_bytes())
    partial.replace(target)
