"""What a harvest takes and what it reports: its options, checked as they are made, its
result, and the error for a harvest that cannot start.

Every part of a harvest reads these (the run, the dependency installer, many projects at
once, the command line), so they sit apart from all of them: the run and the installer
each need the error, and neither need import the other for it. The options check their
own values, so a script making ``HarvestOptions`` is refused as ``execbench harvest`` is,
in the same words, each setting named by its field (the command line names its flag).
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field

from execbench.harvest.jail import MAX_FILE_BYTES, MAX_TEMP_BYTES
from execbench.settings import SettingError, at_least_one


class HarvestError(ValueError):
    """The harvest cannot run: no such folder, no interpreter, or the tests could not start
    under it (pytest missing), or they did not run (``failures.TestsNotRun``). A suite
    whose tests fail or hang is not an error."""


@dataclass(frozen=True)
class HarvestOptions:
    """What ``execbench harvest`` takes; the bounds keep the run and the file small."""

    python: str = sys.executable
    pytest_args: tuple[str, ...] = ()
    seed: int = 0
    max_calls: int = 5
    """Calls kept per function."""
    max_events: int = 1_000
    """Line events per call; a longer call is dropped (its states would be cut)."""
    max_value_nodes: int = 100
    """Nodes per encoded value (``values.encode``)."""
    install_deps: bool = False
    """Run the tests in a cached virtual environment holding the project's declared test
    dependencies (``deps``), made with pip outside the jail."""
    pip_args: tuple[str, ...] = ()
    """More arguments for that pip (an index, ``--no-index --find-links DIR``)."""
    objects: bool = True
    """Keep calls whose values are objects of classes written in Python (methods and their
    ``self``), shown by their attributes; without it only calls on builtin values are kept,
    as the literal-only harvests of earlier versions and CodeSense's own filter did."""
    max_trace_chars: int = 500_000
    """Characters of one call's record."""
    max_lines: int = 200
    """Lines of a function's source."""
    timeout: float = 600.0
    """Wall-clock seconds for the whole test run."""
    test_timeout: float = 300.0
    """Wall-clock seconds for one test (its fixtures included): a test past it fails with
    ``TestTimeout`` and the run goes on. Generous, like pytest-timeout's usual setting: the
    recorder slows a test several times over and a busy machine more (more-itertools'
    ``test_primes``: 16 s untraced, 70 s recorded here, over 60 s with both cores busy),
    and a slow test cut short is lost for nothing."""
    max_file_bytes: int = MAX_FILE_BYTES
    """Bytes of any one file the tests write (``RLIMIT_FSIZE``; the pytest log included)."""
    max_temp_bytes: int = MAX_TEMP_BYTES
    """Bytes of the temp folder, and of ``/dev/shm``, each a private tmpfs where the
    machine allows a mount namespace."""
    language: str = "python"
    """The project's language: ``python`` (its pytest suite), or a compiled language of
    ``languages.LANGUAGES`` (``c``, ``java``), built with ``build`` and tested with
    ``test`` under a debugger (``native``)."""
    build: str = ""
    """The shell command that builds a native project (in the jail; may be empty)."""
    test: str = ""
    """The shell command that runs a native project's tests (in the jail, recorded)."""

    def __post_init__(self) -> None:
        """Refuse the first setting no harvest can use (``SettingError``), before anything
        is copied or run: a bound below 1 would keep nothing, a time limit of 0 would stop
        every test, and pip's arguments without ``install_deps`` would be silently unused."""
        at_least_one({"max_calls": self.max_calls, "max_events": self.max_events,
                      "max_value_nodes": self.max_value_nodes, "max_lines": self.max_lines,
                      "max_trace_chars": self.max_trace_chars,
                      "max_file_bytes": self.max_file_bytes,
                      "max_temp_bytes": self.max_temp_bytes})
        for name, seconds in (("timeout", self.timeout), ("test_timeout", self.test_timeout)):
            if not seconds > 0:  # NaN too
                raise SettingError(f"{{0}} must be positive, not {seconds}", name)
        if self.pip_args and not self.install_deps:
            raise SettingError("{0} is for {1}", "pip_args", "install_deps")
        if self.language != "python":
            from execbench.harvest.languages import LANGUAGES

            if self.language not in LANGUAGES:
                raise SettingError(f"{{0}} is python or one of "
                                   f"{', '.join(LANGUAGES.names())}, not {self.language!r}",
                                   "language")
        if self.language != "python" and not self.test.strip():
            raise SettingError(f"a {self.language} project's tests run with the command {{0}}",
                               "test")
        if self.language == "python" and (self.build or self.test):
            raise SettingError("{0} is for a compiled {1}", "build" if self.build else "test",
                               "language")


@dataclass
class HarvestResult:
    """What happened, for the summary the command prints (the file holds only records)."""

    functions: Counter = field(default_factory=Counter)
    """``kept`` and each reason a function called by the tests was dropped, plus
    ``NEVER_CALLED`` (listed functions the tests never called)."""
    calls: Counter = field(default_factory=Counter)
    """``kept`` and each reason a call was dropped: they add up to ``seen``."""
    seen: int = 0
    """Calls of the listed functions the tests made (a generator's resumptions count)."""
    tests: tuple[int, int] = (0, 0)
    """Tests finished, tests collected."""
    pytest_exit: int | None = None
    timed_out: bool = False
    hung: list[str] = field(default_factory=list)
    """Tests stopped at their own time limit (``test_timeout``), in the order they ran."""
    stopped: str | None = None
    """Why the child stopped the run before pytest ended, if it did."""
    network: str = "unknown"
    layers: dict[str, str] = field(default_factory=dict)
    """The jail's layers, a line each (``jail``)."""
    jail_warnings: list[str] = field(default_factory=list)
    """A warning per layer this machine lacks."""
    refused: Counter = field(default_factory=Counter)
    """Records on the channel refused, by reason (``Records``): none from an honest run."""
    log: str = ""
    """The end of pytest's output."""
    warnings: list[str] = field(default_factory=list)
    ages: Counter = field(default_factory=Counter)
    """Listed functions by their state against a date (``ages.STATES``: new, changed,
    unchanged, undated), for a harvest given a dating; empty otherwise."""

    @property
    def ended_early(self) -> bool:
        """The test run ended without pytest's end, the whole-run limit or the child's
        own stop (the process died)."""
        return self.pytest_exit is None and not self.timed_out and not self.stopped

    @property
    def last_line(self) -> str:
        """The last line pytest printed, for a one-line error."""
        return (self.log.strip().splitlines() or ["no output"])[-1]


DEFAULTS = HarvestOptions()
"""The options of a harvest given none (``execbench harvest`` with no flags)."""
