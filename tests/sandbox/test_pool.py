"""Adversarial programs: each one is contained, classified, and leaves the pool working.

Every test runs a hostile call and then a normal one on the same pool; limits are small so
the whole file stays fast. CPU limits, not wall-clock ones, decide most verdicts, so a busy
machine does not turn a normal call into a timeout.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from execbench.sandbox.pool import Job, Limits, Sandbox, Trace, new_unit
from execbench.sandbox.runner import ANSWERS_FD
from execbench.values import decode
from tests.conftest import QUICK
from tests.helpers.waiting import eventually

HEALTHY = "def f(n):\n    return sum(range(n)), len('abcd')\n"


SANDBOX_LIMITS = QUICK


def _run(sandbox: Sandbox, code: str, args: str = "") -> Trace:
    return sandbox.run(Job(code, "f", args))


def _assert_healthy(sandbox: Sandbox) -> None:
    """Both workers answer a normal call correctly."""
    traces = sandbox.map([Job(HEALTHY, "f", str(n)) for n in range(4)])
    assert [(t.status, t.value_repr) for t in traces] == [
        ("ok", f"({sum(range(n))}, 4)") for n in range(4)]


def _violation(trace: Trace, event: str) -> None:
    assert trace.status == "exception", trace
    assert trace.exception["type"] == "SandboxViolation"
    assert event in trace.exception["message"]


def _alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return "\nState:\tZ" not in status


def _children(parents: set[int]) -> set[int]:
    """Pids whose parent is in ``parents``, read from /proc."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if int(fields[1]) in parents:
            found.add(int(stat.parent.name))
    return found


# --------------------------------------------------------------------------- time and memory


def test_infinite_loop_is_a_cpu_timeout(sandbox: Sandbox) -> None:
    trace = _run(sandbox, "def f():\n    while True:\n        pass\n")
    assert trace.status == "timeout"  # by CPU time, or by wall clock on a starved machine
    _assert_healthy(sandbox)


def test_sleeping_is_a_wall_clock_timeout(sandbox: Sandbox) -> None:
    trace = _run(sandbox, "import time\n\ndef f():\n    time.sleep(100)\n")
    assert trace.status == "timeout"  # a sleep of 100 s was cut short,
    assert "wall-clock" in trace.detail  # by the wall-clock limit
    _assert_healthy(sandbox)


def test_memory_bomb_is_a_memory_verdict(sandbox: Sandbox) -> None:
    code = "def f():\n    hog = []\n    while True:\n        hog.append(bytes(10**8))\n"
    trace = _run(sandbox, code)
    assert trace.status == "memory"
    assert trace.exception["type"] == "MemoryError"
    _assert_healthy(sandbox)


def test_plain_deep_recursion_is_a_recursion_error(sandbox: Sandbox) -> None:
    trace = _run(sandbox, "def f(n=0):\n    return f(n + 1)\n")
    assert trace.status == "exception"
    assert trace.exception["type"] == "RecursionError"
    _assert_healthy(sandbox)


@pytest.mark.parametrize("body", [
    "    return g(n + 1)",  # Python frames only: runs out of CPU (or memory) first
    "    return list(map(g, [n + 1]))",  # recursion through C: overflows the C stack
])
def test_recursion_past_a_raised_limit_kills_only_the_runner(sandbox: Sandbox, body: str) -> None:
    code = f"import sys\n\ndef g(n):\n{body}\n\ndef f():\n    sys.setrecursionlimit(10**6)\n" \
           "    return g(0)\n"
    trace = _run(sandbox, code)
    # Python 3.12 and later bound recursion through C themselves: a RecursionError then.
    c_bound = sys.version_info >= (3, 12) and trace.status == "exception" \
        and trace.exception["type"] == "RecursionError"
    assert trace.status in ("crashed", "timeout", "memory") or c_bound, trace
    _assert_healthy(sandbox)
    assert _run(sandbox, "import sys\n\ndef f():\n    return sys.getrecursionlimit()\n").value \
        == ["int", QUICK.recursion_limit]


def test_printing_100_mb_is_cut_at_the_stdout_limit(sandbox: Sandbox) -> None:
    code = "def f():\n    chunk = 'x' * 10**6\n    for _ in range(100):\n        print(chunk)\n"
    trace = _run(sandbox, code)
    assert trace.status == "output_limit"
    assert len(trace.stdout) == QUICK.stdout_bytes
    _assert_healthy(sandbox)


def test_output_limit_cannot_be_swallowed_by_except_exception(sandbox: Sandbox) -> None:
    code = ("def f():\n    try:\n        print('y' * 10**6)\n    except Exception:\n"
            "        return 'swallowed'\n")
    assert _run(sandbox, code).status == "output_limit"


# --------------------------------------------------------------------------- blocked actions


def test_fork_bomb_is_blocked(sandbox: Sandbox) -> None:
    trace = _run(sandbox, "import os\n\ndef f():\n    while True:\n        os.fork()\n")
    _violation(trace, "os.fork")
    _assert_healthy(sandbox)


@pytest.mark.parametrize(("code", "event"), [
    ("import os\n\ndef f():\n    return os.system('echo hi')\n", "os.system"),
    ("import subprocess\n\ndef f():\n    return subprocess.run(['true'])\n", "subprocess.Popen"),
    ("import os\n\ndef f():\n    os.execv('/bin/true', ['true'])\n", "os.exec"),
    ("import os\n\ndef f():\n    os.kill(os.getppid(), 9)\n", "os.kill"),
    ("import os, signal\n\ndef f():\n    os.killpg(0, signal.SIGKILL)\n", "os.killpg"),
    ("import socket\n\ndef f():\n    return socket.socket()\n", "socket.__new__"),
    ("import socket\n\ndef f():\n    socket.create_connection(('127.0.0.1', 80), timeout=1)\n",
     "socket"),
    ("import resource\n\ndef f():\n    resource.setrlimit(resource.RLIMIT_AS, (-1, -1))\n",
     "resource.setrlimit"),
    ("import ctypes\n\ndef f():\n    return ctypes.CDLL(None)\n", "ctypes"),
])
def test_processes_signals_sockets_and_limits_are_blocked(sandbox: Sandbox, code: str,
                                                          event: str) -> None:
    _violation(_run(sandbox, code), event)
    _assert_healthy(sandbox)


def test_writing_outside_the_temp_dir_is_blocked(sandbox: Sandbox) -> None:
    target = Path(f"/tmp/execbench-evil-{os.getpid()}")
    for code in (f"def f():\n    open({str(target)!r}, 'w').write('x')\n",
                 f"import os\n\ndef f():\n    os.open({str(target)!r}, os.O_WRONLY | os.O_CREAT)\n",
                 f"import os\n\ndef f():\n    os.mkdir({str(target)!r})\n",
                 "import os\n\ndef f():\n    os.chdir('/tmp')\n    open('evil', 'w')\n"):
        _violation(_run(sandbox, code), "blocked by the execbench sandbox")
    assert not target.exists()
    assert not Path("/tmp/evil").exists()
    _assert_healthy(sandbox)


def test_writing_inside_the_working_directory_is_allowed(sandbox: Sandbox) -> None:
    code = ("import os\n\ndef f():\n    with open('notes.txt', 'w') as fh:\n"
            "        fh.write('kept')\n    return open('notes.txt').read(), os.listdir('.')\n")
    trace = _run(sandbox, code)
    assert (trace.status, trace.value_repr) == ("ok", "('kept', ['notes.txt'])")
    # Each call starts in a fresh, empty directory.
    assert _run(sandbox, "import os\n\ndef f():\n    return os.listdir('.')\n").value_repr == "[]"


@pytest.mark.parametrize("spoil", [
    "os.chmod('.', 0o500)", "os.mkdir('sub')", "os.rmdir(os.getcwd())",
    "d = os.getcwd(); os.chdir('..'); os.rmdir(d); os.mkdir(d + 'e'); os.symlink(d + 'e', d)",
])
def test_every_call_starts_in_an_empty_writable_folder(sandbox: Sandbox, spoil: str) -> None:
    _run(sandbox, f"import os\n\ndef f():\n    {spoil}\n")
    after = _run(sandbox, "import os\n\ndef f():\n    open('x', 'w').write('1')\n"
                          "    return os.listdir('.'), os.path.islink(os.getcwd())\n")
    assert decode(after.value) == (["x"], False)
    assert _run(sandbox, "import os\n\ndef f():\n    return os.listdir('.')\n").value_repr == "[]"


def test_sys_exit_is_an_exception(sandbox: Sandbox) -> None:
    trace = _run(sandbox, "import sys\n\ndef f():\n    sys.exit(3)\n")
    assert trace.status == "exception"
    assert (trace.exception["type"], trace.exception["message"]) == ("SystemExit", "3")
    _assert_healthy(sandbox)


def test_os_exit_is_a_crash(sandbox: Sandbox) -> None:
    trace = _run(sandbox, "import os\n\ndef f():\n    os._exit(3)\n")
    assert trace.status == "crashed"
    assert "code 3" in trace.detail
    _assert_healthy(sandbox)


def test_forged_eq_result_is_opaque(sandbox: Sandbox) -> None:
    code = ("class Liar(int):\n    def __eq__(self, other):\n        return True\n\n"
            "def f():\n    return Liar(7)\n")
    trace = _run(sandbox, code)
    assert trace.status == "ok"
    assert trace.value[:2] == ["object", "Liar"]
    _assert_healthy(sandbox)


# --------------------------------------------------------------------------- hygiene


def test_patched_builtins_do_not_reach_the_next_call(sandbox: Sandbox) -> None:
    _run(sandbox, "import builtins\n\ndef f():\n    builtins.len = lambda x: 0\n")
    _run(sandbox, "import builtins\n\ndef f():\n    builtins.sorted = None\n    return 1\n")
    for _ in range(sandbox.size):
        trace = _run(sandbox, "def f():\n    return len([1, 2, 3]), sorted([2, 1])\n")
        assert trace.value_repr == "(3, [1, 2])"
    _assert_healthy(sandbox)


def test_patching_builtins_len_still_returns_the_result(sandbox: Sandbox) -> None:
    trace = _run(sandbox, "import builtins\n\ndef f():\n    builtins.len = lambda x: 0\n"
                          "    return 1\n")
    assert (trace.status, trace.value) == ("ok", ["int", 1])


def test_patched_preloaded_modules_do_not_reach_the_next_call(sandbox: Sandbox) -> None:
    assert _run(sandbox, "import math\n\ndef f():\n    math.pi = 3\n").status == "ok"
    for _ in range(sandbox.size):
        assert _run(sandbox, "import math\n\ndef f():\n    return math.pi\n").value_repr \
            == "3.141592653589793"


def test_environment_threads_and_files_left_behind_do_not_leak(sandbox: Sandbox) -> None:
    dirty = [
        "import os\n\ndef f():\n    os.environ['EXECBENCH_EVIL'] = '1'\n",
        "import threading, time\n\ndef f():\n"
        "    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n",
        "import os\n\ndef f():\n    os.open('leak.txt', os.O_WRONLY | os.O_CREAT)\n",
        "import signal\n\ndef f():\n    signal.signal(signal.SIGPROF, signal.SIG_IGN)\n",
    ]
    for code in dirty:
        assert _run(sandbox, code).status == "ok"
    probe = ("import os, threading\n\ndef f():\n"
             "    return os.environ.get('EXECBENCH_EVIL'), threading.active_count()\n")
    for _ in range(sandbox.size):
        assert _run(sandbox, probe).value_repr == "(None, 1)"
    # The SIGPROF handler was reset, so the CPU limit still fires.
    assert _run(sandbox, "def f():\n    while True:\n        pass\n").status == "timeout"


def test_a_tracer_or_monitoring_tool_left_installed_does_not_reach_the_next_call(
        sandbox: Sandbox) -> None:
    """A call that installs a profiler, or claims a ``sys.monitoring`` tool (3.12+), could
    watch or count the unit's later calls: its runner is recycled instead."""
    code = ("import sys\n\ndef f(install):\n    watch = getattr(sys, 'monitoring', None)\n"
            "    if install:\n        sys.setprofile(lambda *a: None)\n"
            "        if watch:\n            watch.use_tool_id(5, 'left behind')\n"
            "        return None\n"
            "    return sys.getprofile() is None, watch.get_tool(5) if watch else None\n")
    traces = sandbox.map([Job(code, "f", "True"), Job(code, "f", "False")])
    assert [trace.status for trace in traces] == ["ok", "ok"]
    assert traces[1].value_repr == "(True, None)"


def test_a_runner_call_replaced_without_an_import_does_not_reach_the_next_call(
        sandbox: Sandbox) -> None:
    """``random.seed`` (which the runner calls before each call) replaced through
    ``sys.modules``, with no ``import random`` for the module check to watch: the next
    call still starts from the seeded state."""
    code = ("import sys\n\ndef f(replace):\n    chance = sys.modules['random']\n"
            "    if replace:\n        chance.seed = lambda *args: None\n"
            "        chance.random()\n        return None\n    return chance.random()\n")
    fresh = sandbox.run(Job(code, "f", "False"))
    traces = sandbox.map([Job(code, "f", "True"), Job(code, "f", "False")])
    assert traces[1].value == fresh.value


def test_syntax_error_has_phase_compile(sandbox: Sandbox) -> None:
    trace = _run(sandbox, "def f(:\n    return 1\n")
    assert trace.status == "exception"
    assert (trace.exception["type"], trace.exception["phase"]) == ("SyntaxError", "compile")
    _assert_healthy(sandbox)


@pytest.mark.parametrize(("args", "kind"), [("1 / 0", "ZeroDivisionError"),
                                            ("[1", "SyntaxError"),
                                            ("undefined", "NameError")])
def test_arguments_that_fail_have_phase_arguments(sandbox: Sandbox, args: str,
                                                  kind: str) -> None:
    trace = _run(sandbox, "def f(x):\n    return x\n", args)
    assert trace.status == "exception"
    assert (trace.exception["type"], trace.exception["phase"]) == (kind, "arguments")
    _assert_healthy(sandbox)


# --------------------------------------------------------------------------- the pool


def test_bad_calls_run_concurrently_with_good_ones(sandbox: Sandbox) -> None:
    bad = {
        "import os\n\ndef f(n):\n    os._exit(n)\n": "crashed",
        "def f(n):\n    while True:\n        n += 1\n": "timeout",
        "import os\n\ndef f(n):\n    os.fork()\n": "exception",
        "def f(n):\n    return bytes(10**10)\n": "memory",
        "def f(n):\n    print('z' * 10**6)\n": "output_limit",
        "import os\n\ndef f(n):\n    os.kill(os.getppid(), 9)\n": "exception",
    }
    jobs: list[tuple[Job, str]] = []
    for index, (code, status) in enumerate(bad.items()):
        jobs.append((Job(code, "f", "5"), status))
        jobs.extend((Job(HEALTHY, "f", str(index * 3 + k)), "ok") for k in range(3))
    with ThreadPoolExecutor(max_workers=4) as clients:
        traces = list(clients.map(sandbox.run, [job for job, _ in jobs]))
    assert [t.status for t in traces] == [status for _, status in jobs]
    for (job, status), trace in zip(jobs, traces, strict=True):
        if status == "ok":
            n = int(job.args)
            assert trace.value_repr == f"({sum(range(n))}, 4)"
    _assert_healthy(sandbox)


def test_pool_is_usable_from_many_threads() -> None:
    results: dict[int, str | None] = {}

    def client(n: int) -> None:
        results[n] = pool.run(Job("def f(n):\n    return n * n\n", "f", str(n))).value_repr

    with Sandbox(workers=2, limits=QUICK) as pool:
        threads = [threading.Thread(target=client, args=(n,)) for n in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert results == {n: str(n * n) for n in range(16)}


def _serving_zygotes() -> set[int]:
    """This process's sandbox workers that have confined themselves (their seccomp filter
    is on), so serve units: a child of one is a runner, not a start-up probe."""
    found = set()
    for pid in _children({os.getpid()}):
        with contextlib.suppress(OSError):
            if b"execbench.sandbox.worker" in Path(f"/proc/{pid}/cmdline").read_bytes() \
                    and "\nSeccomp:\t2" in Path(f"/proc/{pid}/status").read_text():
                found.add(pid)
    return found


def _needs_seccomp(pool: Sandbox) -> None:
    if not pool.layers.get("seccomp", "").startswith("on"):
        pytest.skip("seccomp is off here: a serving zygote cannot be told from a starting one")


def test_a_worker_dead_between_units_costs_the_next_unit_nothing() -> None:
    """A zygote can die while no unit of its own is to blame (another unit held the user's
    processes, the machine ran out): the job in hand then runs again on a fresh worker, and
    gets its own verdict, not ``crashed``."""
    code = "import os\n\ndef f(n):\n    return os.getppid(), n * n\n"
    with Sandbox(workers=1, limits=QUICK) as pool:
        zygote, _ = decode(pool.run(Job(code, "f", "2")).value)
        os.kill(zygote, signal.SIGKILL)
        eventually(lambda: not _alive(zygote), "the zygote died")
        trace = pool.run(Job(code, "f", "3"))
        assert trace.status == "ok", trace
        assert decode(trace.value)[1] == 9 and decode(trace.value)[0] != zygote
        assert pool.restarts == 1


def test_a_candidate_is_not_charged_the_time_its_dead_worker_had_it() -> None:
    """A candidate's calls share one budget of time; a worker killed two seconds into its
    call must not take them from the call's second run, which would then run out."""
    limits = Limits(cpu_seconds=0.2, wall_seconds=6, memory_mb=512)  # budget: 6.2 s
    killed: list[int] = []
    stop = threading.Event()

    def kill_a_zygote_whose_runner_ran_two_seconds() -> None:
        seen: dict[int, float] = {}
        while not stop.is_set() and not killed:
            for zygote in _serving_zygotes():
                runners = _children({zygote})
                if any(time.monotonic() - seen.setdefault(runner, time.monotonic()) >= 2
                       for runner in runners):
                    os.kill(zygote, signal.SIGKILL)
                    killed.append(zygote)
            stop.wait(0.02)

    with Sandbox(workers=1, limits=limits) as pool:
        pool.run(Job("def f():\n    return 1\n", "f", ""))
        _needs_seccomp(pool)
        killer = threading.Thread(target=kill_a_zygote_whose_runner_ran_two_seconds)
        killer.start()
        try:
            slow = "import time\n\ndef f():\n    time.sleep(5)\n    return 'done'\n"
            trace = pool.run(Job(slow, "f", "", unit=new_unit()))
        finally:
            stop.set()
            killer.join()
        assert len(killed) == 1 and pool.restarts == 1
        assert trace.status == "ok" and trace.value_repr == "'done'", trace


def test_a_job_whose_worker_dies_twice_is_crashed_and_the_pool_goes_on() -> None:
    """The second chance is one: a job in hand each time its worker dies is ``crashed``
    after two deaths, never run again and again; the next job runs on a fresh worker."""
    stop = threading.Event()

    def kill_zygotes_with_runners() -> None:
        while not stop.is_set():
            for zygote in _serving_zygotes():
                if _children({zygote}):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(zygote, signal.SIGKILL)
            stop.wait(0.02)

    with Sandbox(workers=1, limits=QUICK) as pool:
        pool.run(Job("def f():\n    return 1\n", "f", ""))  # started, before the killing
        _needs_seccomp(pool)
        killer = threading.Thread(target=kill_zygotes_with_runners)
        killer.start()
        try:
            trace = pool.run(Job("import time\n\ndef f():\n    time.sleep(2)\n", "f", ""))
        finally:
            stop.set()
            killer.join()
        assert trace.status == "crashed" and "died twice" in trace.detail, trace
        assert pool.restarts == 2
        assert pool.run(Job("def f(n):\n    return n + 1\n", "f", "4")).value_repr == "5"


def test_close_leaves_no_processes_and_no_temp_dirs() -> None:
    code = "import os, time\n\ndef f():\n    time.sleep(0.2)\n" \
           "    return os.getpid(), os.getppid(), os.getcwd()\n"
    pool = Sandbox(workers=2, limits=QUICK)
    traces = pool.map([Job(code, "f", "")] * 6)
    # A crash makes a zygote fork a fresh runner: that one must be cleaned up too.
    assert pool.run(Job("import os\n\ndef f():\n    os._exit(1)\n", "f", "")).status == "crashed"
    zygotes = {t.value[1][1][1] for t in traces}
    runners = {t.value[1][0][1] for t in traces} | _children(zygotes)
    roots = {Path(t.value[1][2][1]).parent for t in traces}
    assert all(_alive(pid) for pid in zygotes)
    assert all(root.is_dir() for root in roots)
    assert sorted(root.name.rsplit("-", 1)[0] for root in roots) == \
        sorted(f"execbench-sandbox-{pid}" for pid in zygotes)
    pool.close()
    eventually(lambda: not any(map(_alive, runners | zygotes)), "the pool's processes ended")
    assert not any(root.exists() for root in roots)
    with pytest.raises(RuntimeError):
        pool.submit(Job(HEALTHY, "f", "1"))


def test_a_folder_left_under_a_guessable_name_is_never_the_temporary_root() -> None:
    """The shared temporary folder outlives processes and pids come round again: a folder a
    killed zygote left, or one planted there, must not become a new zygote's root, or its
    files would sit under the runners' tmpfs and keep it from being removed."""
    shm = os.access("/dev/shm", os.W_OK)
    base = Path("/dev/shm" if shm else os.environ.get("TMPDIR", "/tmp"))
    after = int(subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True).stdout)
    planted = [base / f"execbench-sandbox-{pid}" for pid in range(after + 1, after + 200)]
    planted = [folder for folder in planted if not folder.exists()]
    for folder in planted:
        folder.mkdir()
        (folder / "left").write_text("x")
    try:
        with Sandbox(workers=2, limits=QUICK) as pool:
            code = "import os\n\ndef f():\n    return os.getcwd()\n"
            roots = {Path(decode(t.value)).parent for t in pool.map([Job(code, "f", "")] * 4)}
            assert not roots & set(planted)
            assert all(root.stat().st_mode & 0o777 == 0o700 and not root.is_symlink()
                       for root in roots)
        assert not any(root.exists() for root in roots)
    finally:
        for folder in planted:
            (folder / "left").unlink()
            folder.rmdir()


def test_results_stay_with_their_calls_when_runners_are_killed_at_the_wall_limit():
    """A runner killed at the wall limit while it answers must not shift or stall later calls.

    The result is bigger than a pipe buffer, so the kill often lands mid-answer; a torn
    frame on the shared pipe used to leave the parent waiting forever.
    """
    busy = ("import time\ndef f(d):\n    end = time.monotonic() + d\n"
            "    while time.monotonic() < end:\n        pass\n    print('x' * 300_000)\n"
            "    return 'busy'\n")
    probe = "def g(x):\n    return x\n"
    wall = 0.03
    rng = random.Random(0)
    answered = 0
    trial = 0
    with Sandbox(workers=2, limits=Limits(wall_seconds=wall, cpu_seconds=5)) as sandbox:
        # At least 80 rounds, and on until 200 probes have answered: on a loaded machine
        # more probes overrun 30 ms, so the rounds, not the share answered, are counted.
        while trial < 80 or answered < 200:
            trial += 1
            assert trial <= 2_000, f"only {answered} probes answered in {trial} rounds"
            jobs = [Job(busy, "f", repr(wall + rng.uniform(-0.004, 0.0005))) for _ in range(2)]
            assert {t.status for t in sandbox.map(jobs)} <= {"ok", "timeout"}
            probes = sandbox.map(Job(probe, "g", repr(trial * 10 + i)) for i in range(4))
            # On a loaded machine a probe may itself overrun 30 ms of wall time: that is a
            # timeout, not a shifted result; every probe that answers must answer its own.
            assert {t.status for t in probes} <= {"ok", "timeout"}
            assert [decode(t.value) for t in probes if t.status == "ok"] == \
                [trial * 10 + i for i, t in enumerate(probes) if t.status == "ok"]
            answered += sum(t.status == "ok" for t in probes)
        assert sandbox.restarts == 0


def test_a_result_bigger_than_a_pipe_buffer_comes_back_whole(sandbox: Sandbox) -> None:
    code = "def f(n):\n    print('y' * 100)\n    return list(range(n))\n"
    for n in (10, 30_000):
        trace = sandbox.run(Job(code, "f", repr(n)))
        assert trace.status == "ok"
        assert trace.stdout == "y" * 100 + "\n"
        assert decode(trace.value) == list(range(n))


# A program can write to the worker's protocol pipe (``ANSWERS_FD`` in the runner): what it
# writes there must never hang, crash or mislead the parent.
FORGE = ("import json, os, struct, time\n\n"
         "def frame(message):\n"
         "    body = b'J' + json.dumps(message).encode()\n"
         f"    os.write({ANSWERS_FD}, struct.pack('>I', len(body)) + body)\n\n")


def test_a_forged_ready_frame_cannot_make_the_parent_kill_another_process() -> None:
    victim = subprocess.Popen(["sleep", "60"])
    try:
        evil = FORGE + "def f(pid):\n    frame({'kind': 'ready', 'pid': pid})\n    return 1\n"
        with Sandbox(workers=1, limits=Limits(wall_seconds=1)) as sandbox:
            sandbox.run(Job(evil, "f", str(victim.pid)))
            slow = sandbox.run(Job("import time\n\ndef g():\n    time.sleep(30)\n", "g", ""))
            assert slow.status == "timeout"
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


@pytest.mark.parametrize("junk", [
    "frame({'kind': 'result', 'seq': [1], 'size': 'many'})",
    "frame({'kind': 'result', 'seq': 2, 'size': 10 ** 9})",
    f"os.write({ANSWERS_FD}, struct.pack('>I', 2 ** 31) + b'J')",
    f"os.write({ANSWERS_FD}, b'\\x00\\x00\\x00\\x05Xjunk')",
    "[frame({'kind': 'result', 'seq': s, 'recycle': None, 'size': 0}) for s in range(300)]",
])
def test_forged_frames_then_a_stall_cost_one_worker_and_nothing_else(junk: str) -> None:
    evil = FORGE + f"def f():\n    {junk}\n    time.sleep(600)\n"
    before = _sandbox_processes()
    with Sandbox(workers=1, limits=Limits(wall_seconds=1)) as sandbox:
        first = sandbox.run(Job(evil, "f", ""))
        assert first.status in ("crashed", "timeout")
        honest = sandbox.run(Job("def g(x):\n    return len(x)\n", "g", repr("a" * 300_000)))
        assert (honest.status, decode(honest.value)) == ("ok", 300_000)
    eventually(lambda: not _sandbox_processes() - before,
               "the stalled runner was not left behind")


def _sandbox_processes() -> set[int]:
    """Live zygotes and runners of sandboxes of this test process, from /proc: those in its
    process group (an orphaned runner keeps it), not those of other test runs beside it."""
    found = set()
    group = os.getpgid(0)
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if b"execbench.sandbox.worker" in cmdline.read_bytes():
                stat = (cmdline.parent / "stat").read_bytes()
                if int(stat.rpartition(b")")[2].split()[2]) == group:
                    found.add(int(cmdline.parent.name))
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
    return {pid for pid in found if _alive(pid)}


def test_a_result_of_many_megabytes_comes_back_whole() -> None:
    with Sandbox(workers=1) as sandbox:
        trace = sandbox.run(Job("def f():\n    return 'x' * 9_000_000\n", "f", ""))
    assert trace.status == "ok" and decode(trace.value) == "x" * 9_000_000


def test_one_batch_of_mixed_calls_gives_each_call_its_own_outcome() -> None:
    """One worker takes up to ``BATCH`` queued jobs in one message; a runner that crashes,
    overruns, is killed or recycles mid-batch must cost only its own call."""
    echo = "def f(x):\n    return x\n"
    kinds = {
        "crash": ("import os\ndef f(x):\n    os._exit(3)\n", "crashed"),
        "cpu": ("def f(x):\n    while True:\n        pass\n", "timeout"),
        "wall": ("import time\ndef f(x):\n    time.sleep(30)\n", "timeout"),
        "dirty": ("import os\ndef f(x):\n    os.environ['X'] = '1'\n    return x\n", "ok"),
        "import": ("import wave\ndef f(x):\n    return x\n", "ok"),
    }
    jobs, expected = [], []
    for i, (code, status) in enumerate(kinds.values()):
        for j in range(3):
            jobs.append(Job(echo, "f", repr(10 * i + j)))
            expected.append(("ok", 10 * i + j))
        jobs.append(Job(code, "f", repr(-i)))
        expected.append((status, -i if status == "ok" else None))
    with Sandbox(workers=1, limits=Limits(cpu_seconds=0.3, wall_seconds=1.0)) as sandbox:
        for _ in range(2):
            traces = sandbox.map(jobs)
            got = [(t.status, decode(t.value) if t.status == "ok" else None) for t in traces]
            assert got == expected
        assert sandbox.restarts == 0


def test_a_program_sees_no_call_of_another_program_queued_behind_it() -> None:
    """A runner's batch holds calls of one program only, and the parent sends the next batch
    only after the last answer: a program finds no other program's job (nor its token) in
    its runner's memory or waiting on the pipe, so it cannot answer for one. (The zygote
    parses the batch before the fork and freezes its collector, so the spy unfreezes it to
    see every object.)"""
    spy = (
        "import gc, select\n\n"
        "def f(x):\n"
        "    gc.unfreeze()\n"
        "    jobs = {obj['code'] for obj in gc.get_objects()\n"
        "            if isinstance(obj, dict) and 'seq' in obj and 'code' in obj}\n"
        "    return sorted(jobs), bool(select.select([3], [], [], 0)[0])\n")
    honest = [Job(f"def g(x):\n    return x + {i}\n", "g", "100") for i in range(12)]
    with Sandbox(workers=1) as sandbox:
        traces = sandbox.map([Job(spy, "f", "1"), Job(spy, "f", "2"), *honest, Job(spy, "f", "3")])
    assert [t.status for t in traces] == ["ok"] * 15
    assert [decode(t.value) for t in traces[2:-1]] == [100 + i for i in range(12)]
    for trace in (traces[0], traces[1], traces[-1]):
        assert decode(trace.value) == ([spy], False)


def test_a_codec_loaded_on_first_use_keeps_the_runner_but_an_import_does_not() -> None:
    """Within one unit (calls of one program, sent as one batch), a codec the registry
    loads on first use keeps the runner; an import recycles it for the unit's next call."""
    code = ("import os\n\ndef f(kind):\n    if kind == 'codec':\n"
            "        'x'.encode('shift_jis')\n    elif kind == 'import':\n"
            "        __import__('wave')\n    return os.getpid()\n")
    kinds = ["codec", "plain", "import", "plain"]
    with Sandbox(workers=1) as sandbox:
        pids = [decode(t.value) for t in sandbox.map(Job(code, "f", repr(k)) for k in kinds)]
    assert pids[0] == pids[1] == pids[2] != pids[3]


def test_each_unit_gets_a_runner_of_its_own() -> None:
    """Programs never share a runner, nor do two units of the same code; a program's own
    calls queued together do (also after the zygote has cleaned up after other units)."""
    pid = "import os\n\ndef f(*a):\n    return os.getpid()\n"
    with Sandbox(workers=1) as sandbox:
        others = [decode(sandbox.run(Job(pid + f"# {i}\n", "f", "")).value) for i in range(4)]
        same = {decode(t.value) for t in sandbox.map(Job(pid, "f", str(i)) for i in range(4))}
        units = [decode(sandbox.run(Job(pid, "f", "", unit=new_unit())).value)
                 for _ in range(4)]
    assert len(same) == 1
    assert len({*same, *others, *units}) == 9


@pytest.mark.parametrize("timer", ["signal.alarm(1)", "signal.setitimer(signal.ITIMER_REAL, 0.5)",
                                   "signal.setitimer(signal.ITIMER_VIRTUAL, 0.2)"])
def test_a_timer_a_program_sets_does_not_kill_a_later_call(timer: str) -> None:
    armed = f"import signal\n\ndef f():\n    {timer}\n    return 1\n"
    # Past every timer: CPU time for ITIMER_VIRTUAL, then a sleep (no steps) for the rest.
    spin = "import time\n\ndef g():\n    end = time.process_time() + 0.3\n" \
           "    while time.process_time() < end:\n        pass\n    time.sleep(1.0)\n" \
           "    return 2\n"
    with Sandbox(workers=1) as box:
        assert [decode(t.value) for t in box.map([Job(armed, "f", ""), Job(spin, "g", "")])] \
            == [1, 2]


def test_calls_of_different_programs_spread_over_the_workers() -> None:
    """Only calls of one program share a batch: eight different sleeping programs on four
    workers run side by side, not one after another. Each returns when its sleep began and
    ended (the system-wide monotonic clock): sleeps overlap, whatever the machine's load."""
    jobs = [Job(f"import time\n\ndef f():\n    start = time.monotonic()\n"
                f"    time.sleep(0.3)\n    return {i}, start, time.monotonic()\n", "f", "")
            for i in range(8)]
    with Sandbox(workers=4) as box:
        box.map(jobs[:4])  # workers started
        found = [decode(t.value) for t in box.map(jobs)]
    assert [i for i, _, _ in found] == list(range(8))
    overlapping = max(sum(start <= moment < end for _, start, end in found)
                      for _, moment, _ in found)
    assert overlapping >= 2


_HOLDS_THE_PIDS = '''
import json, sys, time
from pathlib import Path
from execbench.sandbox.pool import Job, Limits, Sandbox, new_unit

HOLD = """import threading, time

def f():
    threading.stack_size(65536)
    wait = threading.Event()
    held = 0
    try:
        while held < 100_000:
            threading.Thread(target=wait.wait, daemon=True).start()
            held += 1
    except RuntimeError:
        pass
    time.sleep(4)
    return held
"""
HONEST = "def g(n):\\n    return n * 3\\n"
with Sandbox(workers=2, limits=Limits(cpu_seconds=1, wall_seconds=8, memory_mb=1024)) as pool:
    pool.map([Job("def f():\\n    return 1\\n", "f", "")] * 4)  # both workers started
    holder = pool.submit(Job(HOLD, "f", "", unit=new_unit()))
    used, limit = Path(sys.argv[1], "pids.current"), int(Path(sys.argv[1], "pids.max").read_text())
    while int(used.read_text()) < limit and not holder.done():
        time.sleep(0.01)  # until the holder's threads have taken every pid
    victims = [pool.submit(Job(HONEST, "g", str(n), unit=new_unit())) for n in range(3)]
    answers = []
    for victim in victims:
        try:
            trace = victim.result()
            answers.append([trace.status, trace.value_repr])
        except Exception as error:  # what the pool must not do: no verdict at all
            answers.append(["no verdict", repr(error)])
    print(json.dumps({"victims": answers, "holder": holder.result().value_repr,
                      "restarts": pool.restarts}))
'''


def _pids_cgroup() -> Path | None:
    """A new pids cgroup (v1 or v2) this test may limit, or None where it cannot make one."""
    bases = [Path("/sys/fs/cgroup/pids")]
    unified = Path("/sys/fs/cgroup/cgroup.subtree_control")
    if unified.exists() and "pids" in unified.read_text().split():
        bases.append(unified.parent)
    for base in bases:
        with contextlib.suppress(OSError):
            group = base / f"execbench-test-{os.getpid()}"
            group.mkdir()
            return group
    return None


def test_a_unit_holding_every_pid_costs_others_a_wait_not_their_verdicts() -> None:
    """Where the processes are limited for the whole tree (a container's pids limit, here a
    pids cgroup of 400), one unit's runner can hold them all with threads, so another
    worker's zygote cannot fork and a fresh one cannot start. The other units' jobs must
    wait for the pids to come back (the holder's runner is killed at its wall-clock limit
    at the latest) and get their own verdicts: never ``crashed``, never an error instead
    of a verdict."""
    group = _pids_cgroup()
    if group is None:
        pytest.skip("no pids cgroup can be made here (needs root and a pids controller)")
    try:
        (group / "pids.max").write_text("400")
        procs = str(group / "cgroup.procs")
        done = subprocess.run(
            [sys.executable, "-c", _HOLDS_THE_PIDS, str(group)], capture_output=True, text=True,
            timeout=300, preexec_fn=lambda: Path(procs).write_text(str(os.getpid())))
        assert done.returncode == 0, done.stderr[-2000:]
        result = json.loads(done.stdout.splitlines()[-1])
        assert result["restarts"] >= 1 and int(result["holder"]) > 200, result
        assert result["victims"] == [["ok", str(3 * n)] for n in range(3)], result
    finally:
        eventually(lambda: not (group / "cgroup.procs").read_text().strip(),
                   "the test's processes ended")
        group.rmdir()
