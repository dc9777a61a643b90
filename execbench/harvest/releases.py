"""Which release of a package a harvest takes, and which it compares it with.

``NAME`` takes the release uploaded last; ``NAME==VERSION`` that version. With
``--new-since DATE``, ``NAME`` takes the first release uploaded after DATE (on a later day,
in UTC), and every choice is compared with the last release uploaded on or before DATE:
its functions are "new" or "changed" only when they do not occur in that one
(``ages``). Time is the index's upload time, not the version's order: a fix of an old
branch uploaded after DATE is the first release after it if nothing came between.
Pre-releases and development releases are taken only when named.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import Version

from execbench.harvest.index import Release
from execbench.harvest.options import HarvestError

_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
_SHOWN = 200
"""Characters of a name that does not read shown in its refusal."""


@dataclass(frozen=True)
class Wanted:
    """A package as the user named it."""

    name: str
    """Normalised (PEP 503)."""
    version: str | None = None


@dataclass(frozen=True)
class Pick:
    """A package's release to harvest and, for ``--new-since``, the one before the date
    (None when it has no release before it: then all its functions are new)."""

    release: Release
    since: date | None = None
    earlier: Release | None = None

    def key(self) -> str:
        """What names this choice in a harvest's key: the files' digests and the date."""
        return " ".join([self.release.sha256, str(self.since),
                         self.earlier.sha256 if self.earlier else "-"])


def wanted(text: str) -> Wanted:
    """``NAME`` or ``NAME==VERSION``; ``HarvestError`` names what does not read (cut: a
    list file's line may be of any length)."""
    name, _, version = (part.strip() for part in text.partition("=="))
    shown = repr(text) if len(text) <= _SHOWN else repr(text[:_SHOWN]) + "..."
    if not _NAME.fullmatch(name):
        raise HarvestError(f"{shown} is not a package name (NAME or NAME==VERSION)")
    if version:
        try:
            Version(version)
        except ValueError:  # InvalidVersion, or a number past int's 4,300 digits
            raise HarvestError(f"{shown}: not a version after '=='") from None
    return Wanted(canonicalize_name(name), version or None)


def wanted_from(texts: list[str], listing: Path | None) -> list[Wanted]:
    """The packages named on the command line, then those a file names (one a line;
    blank lines and ``#`` comments skipped; a byte-order mark at its start too), each
    once; a line that does not read is refused with its number."""
    packages = [wanted(text) for text in texts]
    if listing is not None:
        try:
            lines = listing.read_text(encoding="utf-8-sig").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise HarvestError(f"cannot read the package list {listing}: {exc}") from None
        for number, line in enumerate(lines, 1):
            if line.strip() and not line.lstrip().startswith("#"):
                try:
                    packages.append(wanted(line))
                except HarvestError as exc:
                    raise HarvestError(f"{listing}, line {number}: {exc}") from None
    seen: set[str] = set()
    for package in packages:
        if package.name in seen:
            raise HarvestError(f"the package {package.name!r} is named twice")
        seen.add(package.name)
    return packages


def pick(package: Wanted, found: list[Release], since: date | None) -> Pick:
    """The release to harvest and the one to compare it with (see the module doc);
    ``HarvestError`` says why there is none."""
    by_version: dict[str, Release] = {}
    for release in sorted(found, key=lambda r: (r.uploaded, not r.filename.endswith(".tar.gz"))):
        by_version.setdefault(release.version, release)  # the first file of each version
    if not by_version:
        raise HarvestError(f"{package.name}: the index lists no source distribution")
    ordered = sorted(by_version.values(), key=lambda r: r.uploaded)
    final = [r for r in ordered if not _preliminary(r.version)]
    before = [r for r in final if since is not None and r.uploaded.date() <= since]
    earlier = before[-1] if before else None
    if package.version is not None:
        chosen = next((r for r in ordered if Version(r.version) == Version(package.version)),
                      None)
        if chosen is None:
            raise HarvestError(f"{package.name}: the index has no source distribution of "
                               f"version {package.version}")
        if since is not None and chosen.uploaded.date() <= since:
            raise HarvestError(f"{package.name} {chosen.version} was uploaded on "
                               f"{chosen.uploaded.date()}, not after {since}")
        return Pick(chosen, since, earlier)
    if since is None:
        if not final:
            raise HarvestError(f"{package.name}: the index lists only pre-releases; name one")
        return Pick(final[-1])
    after = [r for r in final if r.uploaded.date() > since]
    if not after:
        raise HarvestError(f"{package.name}: no release uploaded after {since}")
    return Pick(after[0], since, earlier)


def _preliminary(version: str) -> bool:
    """A pre-release or development release (the index's file names parsed already)."""
    return Version(version).is_prerelease
