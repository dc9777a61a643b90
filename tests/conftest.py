"""Shared fixtures, and the test options: slow tests (whole benchmark files built, run and
re-scored) run only with ``--run-slow``, which ``.ci/run`` passes, and corpus-wide checks
run on whole benchmarks only then (on a seeded sample otherwise: the ``corpus`` fixture);
the default run stays quick for development."""

from __future__ import annotations

import fcntl
import os
import signal
from collections.abc import Iterator

import pytest

from execbench.sandbox.pool import Limits, Sandbox
from tests.helpers.corpus import Corpus
from tests.helpers.data import shared_data
from tests.helpers.harvests import LocalHarvest, harvest_locally

QUICK = Limits(cpu_seconds=1, wall_seconds=3, memory_mb=512, stdout_bytes=100_000)
"""Tighter limits, for modules whose programs loop, sleep or print without end: they say
``SANDBOX_LIMITS = QUICK``."""


@pytest.fixture(scope="session")
def _pools() -> Iterator[dict[Limits, Sandbox]]:
    pools: dict[Limits, Sandbox] = {}
    yield pools
    for pool in pools.values():
        pool.close()


@pytest.fixture(scope="module")
def sandbox(request: pytest.FixtureRequest, _pools: dict[Limits, Sandbox]) -> Sandbox:
    """The shared pool for the module's limits (``SANDBOX_LIMITS``, else the defaults),
    one per set of limits for the whole test run. A program that dirties its runner gets
    it replaced, so tests cannot leak into each other through a shared pool."""
    limits = getattr(request.module, "SANDBOX_LIMITS", Limits())
    if limits not in _pools:
        _pools[limits] = Sandbox(workers=2, limits=limits)
    return _pools[limits]


@pytest.fixture(scope="session")
def corpus(pytestconfig: pytest.Config) -> Corpus:
    """Whole benchmarks under ``--run-slow``, seeded samples of them otherwise."""
    return Corpus(full=pytestconfig.getoption("--run-slow"))


@pytest.fixture(scope="session")
def local_harvest(tmp_path_factory: pytest.TempPathFactory) -> LocalHarvest:
    """The shared projects harvested once for the whole test run (``harvest_locally``),
    whichever xdist worker asks first, the others waiting on a lock in the folder the
    workers share; skips when they are absent."""
    shared_data("projects")
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if "PYTEST_XDIST_WORKER" in os.environ else base
    with open(shared / "local-harvest.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return harvest_locally(shared / "local-harvest")


def pytest_configure(config: pytest.Config) -> None:
    """Tests interrupt commands with SIGINT, as Ctrl-C would. A shell without job control
    (``nohup bash -c '... &'``, some CI runners) starts background jobs with SIGINT
    ignored, and every process started from them inherits that: the commands would then
    run to their end. Python's own handler here makes the children start with the default
    disposition again."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if "PYTEST_XDIST_WORKER" in os.environ:
        # Each xdist worker leads a process group of its own: tests that find what they
        # left behind by process group (a sandbox's runners) see no other worker's.
        os.setpgid(0, 0)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run the tests marked slow, and corpus-wide checks on whole "
                          "benchmarks instead of samples (CI does)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow test: run it with --run-slow (.ci/run does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


SPREAD = ("tests/test_oracle_everywhere.py",)
"""Modules of long tests that share nothing (no fixture of their own above function
scope): each test may go to any worker, where other modules go whole."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: half again as many workers as cores for the default run, whose tests
    wait on servers, sleeps and child processes about a third of the time; one per core
    with ``--run-slow``, whose long builds keep a core busy (more would stretch each past
    its time-out for nothing)."""
    cores = os.cpu_count() or 1
    return cores if config.getoption("--run-slow") else cores + (cores + 1) // 2


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """Whole modules per worker (``--dist loadscope``), except ``SPREAD``'s tests, one by
    one, so that one module of slow tests does not keep a worker busy alone."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModulesSpread(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.split("::", 1)[0] in SPREAD:
                return nodeid
            return super()._split_scope(nodeid)

    return ModulesSpread(config, log)
