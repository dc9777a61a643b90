"""Java: a project's JUnit tests on the JVM, recorded through the JVM's debug interface.

The recorder is a small Java program (``jdi/``, JDI only) compiled at first use with the
JDK's ``javac`` and kept in the user's cache, in a folder named by the hash of its sources
and the JDK's version, so a changed helper or another JDK compiles afresh and nothing
stale is run. The driver gets a copy under the scratch folder (the jail cannot read the
user's cache).

In the jail the recorder runs the test command itself with ``JAVA_TOOL_OPTIONS`` naming
the JDWP agent, so every JVM the command starts (``java`` running JUnit, and ``javac`` too)
connects back to it on 127.0.0.1: JDWP has no transport but TCP on Linux, so the jail
brings up the loopback interface of its own empty network namespace (``loopback``), which
reaches no other machine and no process outside the jail. A JVM that never loads a
project class (``javac``) gets no request but the class-prepare ones and runs at full
speed. How the recorder follows calls, and what it costs, is in ``jdi/Session.java``.

What counts as the project's own code: classes whose package and source file name lead to
one of the listed ``.java`` files outside the tests (a folder named ``test`` or
``tests``, a file named ``*Test.java``, ``*Tests.java`` or ``Test*.java``); of those,
methods with code (no constructors, static initialisers or compiler-made methods). The
build must keep local variable names: javac does with ``-g``, which ``JDK_JAVAC_OPTIONS``
adds to every ``javac`` the build and the tests run; a method compiled without them is
not recorded.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from execbench.harvest.deps import cache_folder
from execbench.harvest.languages import Recorder
from execbench.harvest.options import HarvestError, HarvestOptions

HELPER = Path(__file__).with_name("jdi")
"""The recorder's Java sources."""
MAIN_CLASS = "Recorder"
DEBUG_INFO = {"JDK_JAVAC_OPTIONS": "-g"}
"""Read by every ``javac`` (JDK 9 and later) before its own arguments."""


@dataclass(frozen=True)
class Jdk:
    """The JDK the recorder and the project's build use: found from ``JAVA_HOME`` or the
    ``javac`` on ``PATH``."""

    home: Path

    @property
    def java(self) -> Path:
        return self.home / "bin" / "java"

    @property
    def javac(self) -> Path:
        return self.home / "bin" / "javac"

    def version(self) -> str:
        """The JDK's own statement of its version (its ``release`` file)."""
        release = self.home / "release"
        return release.read_text(encoding="utf-8") if release.is_file() else str(self.home)

    def readable(self) -> list[str]:
        """What the JVM reads: the JDK and the folders its links lead to (Debian keeps
        ``conf`` and ``lib/jvm.cfg`` under ``/etc/java-N-openjdk``)."""
        paths = {str(self.home)}
        for link in (self.home / "conf", self.home / "lib" / "jvm.cfg"):
            target = link.resolve()
            if target != link and target.exists():
                paths.add(str(target if target.is_dir() else target.parent))
        return sorted(paths)


def find_jdk() -> Jdk:
    """The JDK, or a ``HarvestError`` saying how to get one."""
    home = os.environ.get("JAVA_HOME")
    javac = Path(home) / "bin" / "javac" if home else None
    if javac is None or not javac.is_file():
        found = shutil.which("javac")
        javac = Path(found).resolve() if found else None
    if javac is None or not (javac.parent / "java").is_file():
        raise HarvestError("no JDK found (javac and java): install one (Debian: "
                           "apt-get install default-jdk-headless) or set JAVA_HOME")
    return Jdk(javac.parent.parent)


def helper_classes(jdk: Jdk) -> Path:
    """The compiled recorder: from the cache, compiled there first when missing. The
    folder is filled beside its final name and renamed into place, so two harvests that
    compile at once each leave a whole one."""
    sources = sorted(HELPER.glob("*.java"))
    digest = hashlib.sha256(jdk.version().encode())
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    target = cache_folder().parent / "jdi" / digest.hexdigest()[:24]
    if (target / f"{MAIN_CLASS}.class").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix="building-", dir=target.parent))
    try:
        done = subprocess.run([str(jdk.javac), "-encoding", "UTF-8", "-d", str(building),
                               *map(str, sources)], capture_output=True, text=True,
                              timeout=600)
        if done.returncode != 0:
            raise HarvestError(f"the Java recorder did not compile:\n{done.stderr[-2000:]}")
        try:
            building.rename(target)
        except OSError:
            if not (target / f"{MAIN_CLASS}.class").is_file():
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target


class Java:
    """The ``Language`` of Java projects (``language.Language``)."""

    name = "java"
    suffixes = (".java",)

    def tools(self) -> list[str]:
        return find_jdk().readable()

    def build_env(self, options: HarvestOptions) -> dict[str, str]:
        return dict(DEBUG_INFO)

    def recorder(self, scratch: Path, test: str, config: Path) -> Recorder:
        jdk = find_jdk()
        copy = scratch / "jdi-recorder"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(helper_classes(jdk), copy)
        copy.chmod(0o755)  # the jail's unprivileged user reads it (mkdtemp made it 0700)
        # java.io opened: the recorder writes the channel, an inherited descriptor with no
        # path, through FileDescriptor's field (Java has no public way to adopt one).
        argv = [str(jdk.java), "--add-opens", "java.base/java.io=ALL-UNNAMED",
                "-cp", str(copy), MAIN_CLASS, str(config), "--", "/bin/sh", test]
        return Recorder(argv=argv, read=[str(copy), *jdk.readable()], env=dict(DEBUG_INFO),
                        loopback=True)


LANGUAGE = Java()
