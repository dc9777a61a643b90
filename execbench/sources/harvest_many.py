"""``execbench harvest`` over many projects: each harvested on its own, the results kept per
project and merged, a run that stops resumed where it stopped.

A project is a folder or a source archive (``.tar.gz``, ``.tgz``, ``.tar``, ``.zip``)
holding one. Each is harvested by ``harvest.harvest`` (its own jail, its own time limits),
and its outcome written as two files under ``OUT/projects/``: ``NAME.jsonl`` (its records,
each ``id`` prefixed with ``NAME:`` so that ids stay unique once merged) and ``NAME.json``
(its summary, and the key below). ``OUT/harvest.jsonl`` joins the records of the projects
that were harvested, in the order the projects were given, so the same projects and
settings give the same bytes whatever order they finished in.

The key is a digest of the settings (``HarvestOptions``) and of the project's bytes (the
archive's, or every file a harvest copies from the folder): a project whose summary holds
the same key and no error is not harvested again. A project whose harvest fails (it cannot
be unpacked, its tests cannot start) gets a summary with the error and no records; the
others go on, and the next run tries it again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from execbench import __version__
from execbench.sources.harvest import (
    COPY_IGNORED,
    HarvestError,
    HarvestOptions,
    HarvestResult,
    harvest,
)

ARCHIVES = (".tar.gz", ".tgz", ".tar", ".zip")
SUMMARY_VERSION = 1


@dataclass(frozen=True)
class Project:
    name: str
    """Unique among the projects of one run: the folder's name, or the archive's without
    its extension."""
    path: Path


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
        raise HarvestError("no project given: name folders or archives, or --projects FILE")
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


def project_key(project: Project, options: HarvestOptions) -> str:
    """The digest that says a harvest of ``project`` with ``options`` is the one on disk."""
    digest = hashlib.sha256()
    digest.update(json.dumps({"execbench": __version__, **dataclasses.asdict(options)},
                             sort_keys=True, default=str).encode())
    for relative, full in _contents(project.path):
        digest.update(len(relative).to_bytes(4, "big") + relative.encode())
        digest.update(full.stat().st_size.to_bytes(8, "big"))
        with open(full, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def _contents(path: Path) -> Iterator[tuple[str, Path]]:
    """The files a harvest reads, by the name they have in it: an archive whole; a
    folder's files as the scratch copy takes them (a link by its target's name), sorted."""
    if not path.is_dir():
        yield path.name, path
        return
    ignored = shutil.ignore_patterns(*COPY_IGNORED)
    for folder, subfolders, files in os.walk(path):
        skip = ignored(folder, [*subfolders, *files])
        subfolders[:] = sorted(name for name in subfolders if name not in skip)
        links = [name for name in subfolders if (Path(folder) / name).is_symlink()]
        for name in sorted([*files, *links]):
            full = Path(folder) / name
            if name in skip:
                continue
            if full.is_symlink():
                yield f"{full.relative_to(path)} -> {os.readlink(full)}", Path(os.devnull)
            elif full.is_file():
                yield str(full.relative_to(path)), full


def unpacked(archive: Path, into: Path) -> Path:
    """The project folder an archive holds: its one top folder, or the whole archive when
    it has several entries at the top. It is unpacked here, outside any jail, so only
    plain files and folders are taken, each inside ``into``: an archive with a link, a
    device or a member whose path leaves the folder is refused whole (links are how
    archives have escaped ``tarfile``'s own filter)."""
    if not archive.name.endswith(".zip") and not hasattr(tarfile, "data_filter"):
        raise HarvestError(f"{archive}: this Python's tarfile cannot unpack safely (3.11.4 "
                           "or later can); unpack it yourself and give the folder")
    into.mkdir()
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as packed:
                names = packed.namelist()
                _inside(archive, into, names)
                packed.extractall(into)
        else:
            with tarfile.open(archive) as packed:
                members = packed.getmembers()
                odd = next((m.name for m in members if not (m.isfile() or m.isdir())), None)
                if odd is not None:
                    raise HarvestError(f"{archive}: {odd!r} is a link or a device; only "
                                       "files and folders are unpacked")
                _inside(archive, into, [m.name for m in members])
                packed.extractall(into, members=members, filter="data")
    except HarvestError:
        raise
    except Exception as exc:  # noqa: BLE001 - zlib, EOF, encryption: all a bad archive
        said = " ".join(str(exc).split())  # tarfile's errors may span lines
        raise HarvestError(f"cannot unpack {archive}: {type(exc).__name__}: {said}") from exc
    top = list(into.iterdir())
    return top[0] if len(top) == 1 and top[0].is_dir() else into


def _inside(archive: Path, into: Path, names: list[str]) -> None:
    base = into.resolve()
    for name in names:
        if os.path.isabs(name) or not (base / name).resolve().is_relative_to(base):
            raise HarvestError(f"{archive}: {name!r} would be written outside the project")


def harvest_projects(projects: list[Project], out: Path, options: HarvestOptions,
                     progress: Callable[[Project, dict[str, Any]], None] | None = None,
                     warn: Callable[[str], None] = lambda message: None,
                     started: Callable[[Project], None] | None = None) -> list[Outcome]:
    """Harvest each project in turn into ``out`` (see the module doc); returns what became
    of each, in the order given."""
    folder = out / "projects"
    folder.mkdir(parents=True, exist_ok=True)
    outcomes = []
    for project in projects:
        if started is not None:
            started(project)
        outcomes.append(_one(project, folder, options, progress, warn))
    _merge(out / "harvest.jsonl", folder, [o for o in outcomes if o.state != "failed"])
    return outcomes


def _one(project: Project, folder: Path, options: HarvestOptions,
         progress: Callable[[Project, dict[str, Any]], None] | None,
         warn: Callable[[str], None]) -> Outcome:
    records, summary_path = folder / f"{project.name}.jsonl", folder / f"{project.name}.json"
    try:
        key = project_key(project, options)
    except OSError as exc:
        return _failed(project, summary_path, records, "", f"cannot read it: {exc}")
    old = _read_summary(summary_path)
    if old.get("key") == key and "error" not in old and records.is_file():
        return Outcome(project, "already harvested", old)
    # gone before the records change, so a run stopped in between leaves no summary that
    # could vouch for them
    summary_path.unlink(missing_ok=True)
    each = None if progress is None else (lambda status: progress(project, status))
    try:
        with tempfile.TemporaryDirectory(prefix="execbench-project-") as scratch:
            root = project.path if project.path.is_dir() else \
                unpacked(project.path, Path(scratch) / "unpacked")
            scratch_out = Path(scratch) / "harvest.jsonl"
            result = harvest(root, scratch_out, options, progress=each,
                             warn=lambda message: warn(f"{project.name}: {message}"))
            _prefixed(scratch_out, records, project.name)
    except (HarvestError, OSError) as exc:
        return _failed(project, summary_path, records, key, str(exc))
    if result.ended_early:
        return _failed(project, summary_path, records, key,
                       f"the test run ended early: {result.last_line}")
    summary = {"version": SUMMARY_VERSION, "project": project.name,
               "path": str(project.path), "key": key, **summary_of(result)}
    _write_whole(summary_path, json.dumps(summary, indent=1) + "\n")
    return Outcome(project, "harvested", summary)


def summary_of(result: HarvestResult) -> dict[str, Any]:
    """What a project's summary file keeps of its harvest."""
    return {"tests": list(result.tests), "pytest_exit": result.pytest_exit,
            "timed_out": result.timed_out, "stopped": result.stopped, "hung": result.hung,
            "functions": dict(result.functions), "calls": dict(result.calls),
            "refused": dict(result.refused), "jail_warnings": result.jail_warnings}


def _failed(project: Project, summary_path: Path, records: Path, key: str,
            error: str) -> Outcome:
    records.unlink(missing_ok=True)
    summary = {"version": SUMMARY_VERSION, "project": project.name,
               "path": str(project.path), "key": key, "error": error}
    _write_whole(summary_path, json.dumps(summary, indent=1) + "\n")
    return Outcome(project, "failed", summary)


def _write_whole(path: Path, text: str) -> None:
    """``text`` in ``path`` whole or not at all: a run stopped here leaves no half file."""
    partial = path.with_name(path.name + ".part")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def _read_summary(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) and found.get("version") == SUMMARY_VERSION \
        else {}


def _prefixed(source: Path, target: Path, name: str) -> None:
    """``source``'s records with ids made unique across projects."""
    lines = []
    for line in source.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        record["id"] = f"{name}:{record['id']}"
        record["meta"] = {**record.get("meta", {}), "project": name}
        lines.append(json.dumps(record) + "\n")
    _write_whole(target, "".join(lines))


def _merge(target: Path, folder: Path, outcomes: list[Outcome]) -> None:
    """The projects' records joined, a project at a time (many projects need not fit in
    memory at once), and put in place whole."""
    partial = target.with_name(target.name + ".part")
    with open(partial, "wb") as merged:
        for outcome in outcomes:
            merged.write((folder / f"{outcome.project.name}.jsonl").read_bytes())
    partial.replace(target)
