"""The kernel layers under the audit hook: each route out is closed even when a program
has first switched the audit hook off (which Python code can do, as ``UNHOOK`` shows).

Every test checks what happened outside (no file created, the parent alive, no secret in
the result), not only that the program saw an error.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from execbench.sandbox import confine
from execbench.sandbox.pool import Job, Limits, Sandbox, worker_environment
from execbench.sandbox.runner import ANSWERS_FD
from execbench.sandbox.trace import Trace
from execbench.values import decode
from tests.helpers.waiting import eventually

# Finds the runner's audit hook through the garbage collector and defuses it: its globals
# (the blocked event names) emptied, its path check answering "inside" for every path.
UNHOOK = '''
import gc

def unhook():
    for obj in gc.get_objects():
        if type(obj).__name__ == "function" and obj.__name__ == "hook" and obj.__closure__:
            obj.__globals__["_BLOCKED_EVENTS"] = frozenset()
            obj.__globals__["_PATH_EVENTS"] = frozenset()
            for cell in obj.__closure__:
                if callable(cell.cell_contents):
                    cell.cell_contents = lambda path: True
            return True
    return False

'''


def _plan() -> confine.Plan:
    root = os.path.realpath("/dev/shm" if os.access("/dev/shm", os.W_OK) else "/tmp")
    return confine.probe(root)


PLAN = _plan()
needs_seccomp = pytest.mark.skipif(not PLAN.seccomp, reason="seccomp is not available here: "
                                   + "; ".join(PLAN.warnings))
needs_landlock = pytest.mark.skipif(not PLAN.landlock_abi, reason="Landlock is not available "
                                    "here: " + "; ".join(PLAN.warnings))



def _run(sandbox: Sandbox, body: str, args: str = "") -> Trace:
    """Run ``f(args)`` after the audit hook has been defused; the hook must be found."""
    code = UNHOOK + "def f(*args):\n    assert unhook()\n" + \
        "".join(f"    {line}\n" for line in body.splitlines())
    trace = sandbox.run(Job(code, "f", args))
    assert trace.status in ("ok", "exception"), trace
    return trace


def _attempt(sandbox: Sandbox, imports: str, call: str) -> object:
    """Try ``call`` in a runner whose audit hook is defused: the name of the ``OSError``
    it raised, or ``'done'``."""
    body = f"import {imports}\ntry:\n    {call}\nexcept OSError as exc:\n" \
           "    return type(exc).__name__\nreturn 'done'"
    return _outcome(_run(sandbox, body))


def _outcome(trace: Trace) -> object:
    if trace.status == "exception":
        return trace.exception["type"]
    return decode(trace.value)


def test_the_audit_hook_can_be_defused_so_the_kernel_layers_matter(sandbox: Sandbox) -> None:
    trace = _run(sandbox, "import os\nos.kill(os.getpid(), 0)\nreturn 'hook off'")
    assert _outcome(trace) == "hook off"


@needs_seccomp
def test_posixsubprocess_fork_exec_creates_nothing(sandbox: Sandbox, tmp_path: Path) -> None:
    target = tmp_path / "created-by-program"
    body = f"""import _posixsubprocess, subprocess
try:
    subprocess.Popen(['/usr/bin/touch', {str(target)!r}]).wait()
except OSError as exc:
    return type(exc).__name__
return 'started'"""
    assert _outcome(_run(sandbox, body)) == "PermissionError"
    assert not target.exists()


@needs_seccomp
@pytest.mark.parametrize("call", [
    "os.fork()", "os.system('touch created')", "os.execv(TOUCH, ['touch', 'created'])",
    "os.posix_spawn(TOUCH, ['touch', 'created'], {})",
    "os.spawnv(os.P_WAIT, TOUCH, ['touch', 'created'])", "__import__('pty').fork()",
])
def test_no_process_creation_through_os(sandbox: Sandbox, call: str) -> None:
    """Each call tries to start ``touch created`` in the runner's own folder (where the
    runner may write), so a process that ran would leave the file behind."""
    body = f"""import os
TOUCH = '/usr/bin/touch'
error = None
try:
    pid = {call}
    if pid == 0:
        os.execv(TOUCH, ['touch', 'created'])
except OSError as exc:
    error = type(exc).__name__
return [error, os.path.exists('created')]"""
    error, created = _outcome(_run(sandbox, body))
    assert not created
    assert error in ("PermissionError", "OSError", None), error


@needs_seccomp
def test_threads_still_work(sandbox: Sandbox) -> None:
    body = """import threading
box = []
t = threading.Thread(target=lambda: box.append(1))
t.start(); t.join()
return box"""
    assert _outcome(_run(sandbox, body)) == [1]


@needs_seccomp
@pytest.mark.parametrize("call", [
    "socket.socket(socket.AF_INET, socket.SOCK_STREAM)",
    "socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)",
    "socket.create_connection(('127.0.0.1', 9), timeout=1)",
])
def test_no_sockets(sandbox: Sandbox, call: str) -> None:
    assert _attempt(sandbox, "socket", call) == "PermissionError"


def test_secrets_in_the_environment_do_not_reach_programs() -> None:
    secrets = {"OPENAI_API_KEY": "sk-test-secret", "ANTHROPIC_API_KEY": "sk-ant-secret",
               "AWS_SECRET_ACCESS_KEY": "aws-secret", "HF_TOKEN": "hf-secret",
               "MY_SERVICE_PASSWORD": "hunter2"}
    assert not set(secrets) & set(worker_environment())
    code = "import os\n\ndef f():\n    return dict(os.environ)\n"
    saved = {k: os.environ.get(k) for k in secrets}
    os.environ.update(secrets)
    try:
        with Sandbox(workers=1) as box:
            environ = decode(box.run(Job(code, "f", "")).value)
            stolen = _run(box, """try:
    return open('/proc/self/environ', 'rb').read().decode()
except OSError as exc:
    return type(exc).__name__""")
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    assert not set(secrets) & set(environ)
    assert set(environ) <= {*confine.ENV_ALLOWED, "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE",
                            "PYTHONSAFEPATH", "HOME", "TMPDIR"} | {k for k in environ
                                                                    if k.startswith("LC_")}
    assert not any(value in str(_outcome(stolen)) for value in secrets.values())


@needs_landlock
def test_another_process_environment_cannot_be_read(sandbox: Sandbox) -> None:
    os.environ["EXECBENCH_TEST_SECRET"] = "parent-secret"
    body = f"""try:
    return open('/proc/{os.getpid()}/environ', 'rb').read().decode(errors='replace')
except OSError as exc:
    return type(exc).__name__"""
    try:
        outcome = _outcome(_run(sandbox, body))
    finally:
        del os.environ["EXECBENCH_TEST_SECRET"]
    assert outcome == "PermissionError"


@needs_landlock
def test_files_outside_the_readable_trees_cannot_be_read(sandbox: Sandbox,
                                                          tmp_path: Path) -> None:
    secret = tmp_path / ".env"
    secret.write_text("OPENAI_API_KEY=sk-from-a-dotenv\n")
    secret.chmod(0o644)
    body = f"""try:
    return open({str(secret)!r}).read()
except OSError as exc:
    return type(exc).__name__"""
    assert _outcome(_run(sandbox, body)) == "PermissionError"
    readable = "import json\nreturn open(json.__file__).read()[:10]"  # the stdlib stays readable
    assert isinstance(_outcome(_run(sandbox, readable)), str)


@needs_landlock
@pytest.mark.parametrize("how", ["plain", "symlink", "hardlink", "rename"])
def test_writes_out_of_the_temp_root_are_refused(sandbox: Sandbox, tmp_path: Path,
                                                  how: str) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("original")
    victim.chmod(0o666)  # even a file anyone may write stays untouched
    fresh = tmp_path / "fresh.txt"
    body = {
        "plain": f"open({str(fresh)!r}, 'w').write('pwned')",
        "symlink": f"os.symlink({str(victim)!r}, 'link')\nopen('link', 'w').write('pwned')",
        "hardlink": f"os.link({str(victim)!r}, 'hard')\nopen('hard', 'w').write('pwned')",
        "rename": f"open('x', 'w').write('pwned')\nos.rename('x', {str(fresh)!r})",
    }[how]
    program = "import os\ntry:\n" + "".join(f"    {line}\n" for line in body.splitlines()) + \
        "except OSError as exc:\n    return type(exc).__name__\nreturn 'written'"
    outcome = _outcome(_run(sandbox, program))
    assert outcome in ("PermissionError", "OSError"), outcome
    assert victim.read_text() == "original"
    assert not fresh.exists()


@needs_seccomp
@pytest.mark.parametrize("how", ["kill", "killpg", "pidfd", "zygote"])
def test_signals_cannot_reach_the_parent(sandbox: Sandbox, how: str) -> None:
    parent = os.getpid()
    call = {
        "kill": f"os.kill({parent}, signal.SIGKILL)",
        "killpg": "os.killpg(0, signal.SIGKILL)",
        "pidfd": f"signal.pidfd_send_signal(os.pidfd_open({parent}), signal.SIGKILL)",
        "zygote": "os.kill(os.getppid(), signal.SIGKILL)",
    }[how]
    assert _attempt(sandbox, "os, signal", call) == "PermissionError"
    assert _outcome(_run(sandbox, "return 'the worker is alive'")) == "the worker is alive"


@needs_seccomp
@pytest.mark.parametrize("call", [
    "os.kill(os.getppid(), 0)",
    "os.pidfd_open(os.getppid())",
    "resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE)",
    "os.setpriority(os.PRIO_PROCESS, os.getppid(), 19)",
    "os.sched_setaffinity(os.getppid(), {0})",
    "open(f'/proc/{os.getppid()}/mem', 'rb').read(1)",
    "open(f'/proc/{os.getppid()}/environ', 'rb').read(1)",
    "os.listdir(f'/proc/{os.getppid()}/fd')",
])
def test_a_runner_cannot_reach_its_zygote_though_they_share_a_user(call: str) -> None:
    """The zygote drops to the runners' user once (``confine.enclose``): what kept a
    runner from it before, a user of its own, is gone, so the other layers must: seccomp
    for signals, pidfds and tuning, Landlock and the zygote being undumpable for its
    ``/proc`` entries."""
    with Sandbox(workers=1) as box:
        assert _attempt(box, "os, resource", call) == "PermissionError"
        assert _outcome(_run(box, "return 'the worker is alive'")) == "the worker is alive"
        assert box.restarts == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="the user drop applies when started as root")
def test_the_zygote_runs_as_its_runners_user_and_is_undumpable(sandbox: Sandbox) -> None:
    """Seen from outside: the zygote's user is its runners', and the entries of its
    ``/proc`` folder are root's (the kernel's mark of a process that may not be traced or
    read by its own user)."""
    zygote = _outcome(_run(sandbox, "import os\nreturn os.getppid()"))
    runner_uid = _outcome(_run(sandbox, "import os\nreturn os.getuid()"))
    status = Path(f"/proc/{zygote}/status").read_text()
    uids = next(line.split()[1:] for line in status.splitlines() if line.startswith("Uid:"))
    assert set(map(int, uids)) == {runner_uid} != {0}
    assert os.stat(f"/proc/{zygote}/mem").st_uid == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="the user drop applies when started as root")
def test_runners_of_a_root_parent_are_not_root(sandbox: Sandbox) -> None:
    body = "import os\nreturn [os.getuid(), os.geteuid(), os.getgid(), os.getgroups()]"
    uid, euid, gid, groups = _outcome(_run(sandbox, body))
    assert uid == euid != 0 and gid != 0 and groups == []
    assert "uid" in sandbox.layers["user"]


@needs_seccomp
def test_a_defused_runner_is_still_held_after_many_calls(sandbox: Sandbox,
                                                        tmp_path: Path) -> None:
    target = tmp_path / "late"
    for _ in range(3):
        _run(sandbox, "return 1")
    body = f"""import os
try:
    os.fork()
except OSError:
    pass
try:
    open({str(target)!r}, 'w')
except OSError:
    pass
return 'done'"""
    assert _outcome(_run(sandbox, body)) == "done"
    assert not target.exists()


def test_the_probe_reports_every_layer() -> None:
    layers = PLAN.layers()
    assert set(layers) == {"isolation", "ipc", "temp root", "seccomp", "landlock", "user",
                           "network", "environment", "audit hook"}
    with Sandbox(workers=1) as box:
        box.run(Job("def f():\n    return 1\n", "f", ""))
        assert set(box.layers) == set(layers)
        assert box.layers["seccomp"].startswith("on") == PLAN.seccomp


def test_apply_in_a_child_holds_without_any_audit_hook(tmp_path: Path) -> None:
    """The layers alone, in a plain forked child: no Python-level guard at all."""
    if not (PLAN.seccomp or PLAN.landlock_abi):
        pytest.skip("no kernel layer is available here: " + "; ".join(PLAN.warnings))
    root = tmp_path / "root"
    root.mkdir()
    if PLAN.user:
        os.chown(root, *PLAN.user)
    plan = confine.Plan(root=str(root), landlock_abi=PLAN.landlock_abi,
                        read_paths=PLAN.read_paths, user=PLAN.user, seccomp=PLAN.seccomp)
    outside = tmp_path / "outside"
    script = f"""
import os, socket, sys
from execbench.sandbox import confine, syscall_filter
plan = confine.Plan(root={str(root)!r}, landlock_abi={plan.landlock_abi},
                    read_paths={plan.read_paths!r}, user={plan.user!r}, seccomp={plan.seccomp},
                    seccomp_programs=syscall_filter.compile_filters() if {plan.seccomp} else None)
confine.enclose(plan)  # what a zygote puts on itself, then what each runner adds
confine.apply(plan)
results = {{}}
for name, action in [
    ("fork", os.fork), ("socket", socket.socket),
    ("write outside", lambda: open({str(outside)!r}, "w")),
    ("kill parent", lambda: os.kill(os.getppid(), 0)),
    ("write inside", lambda: open(os.path.join({str(root)!r}, "ok"), "w").close()),
]:
    try:
        action()
        results[name] = "allowed"
    except OSError as exc:
        results[name] = type(exc).__name__
print(results)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, env=worker_environment())
    assert done.returncode == 0, done.stderr
    results = eval(done.stdout)  # noqa: S307 - our own child's repr of a dict of strings
    if PLAN.seccomp:
        assert results["fork"] == results["socket"] == results["kill parent"] == \
            "PermissionError"
    if PLAN.landlock_abi or PLAN.user:
        assert results["write outside"] == "PermissionError"
    assert results["write inside"] == "allowed"
    assert not outside.exists()


@needs_seccomp
def test_no_terminal_to_type_into(sandbox: Sandbox) -> None:
    """The parent's stderr may be the user's terminal: a runner's standard streams are
    /dev/null, and TIOCSTI (typing a command into a terminal) is refused on any descriptor."""
    body = """import fcntl, os, termios
streams = [os.readlink(f'/proc/self/fd/{fd}') for fd in (0, 1, 2)]
try:
    fcntl.ioctl(0, termios.TIOCSTI, b'x')
    typed = 'typed'
except OSError as exc:
    typed = type(exc).__name__
return streams, typed"""
    streams, typed = _outcome(_run(sandbox, body))
    assert streams == ["/dev/null"] * 3
    assert typed == "PermissionError"  # not ENOTTY: refused before the descriptor is looked at


def test_a_missing_layer_is_warned_about_once_and_reported_off(tmp_path: Path) -> None:
    """Without libseccomp (a stand-in ``pyseccomp`` that fails to load, as the real one does
    when the library is missing) the sandbox still runs, says so once, and reports it."""
    (tmp_path / "pyseccomp.py").write_text("raise RuntimeError('Unable to find libseccomp')\n")
    script = """
from execbench.sandbox.pool import Job, Sandbox
for _ in range(2):
    with Sandbox(workers=2) as box:
        print(box.run(Job("def f():\\n    return 6 * 7\\n", "f", "")).value_repr)
        print(box.layers["seccomp"])
"""
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["42", "off"]
    warnings = [line for line in done.stderr.splitlines() if "seccomp" in line]
    assert len(warnings) == 1 and "libseccomp" in warnings[0], done.stderr


# Found by an adversarial pass: each route below worked before it was closed.

def test_patching_the_runner_modules_cannot_forge_later_calls(sandbox: Sandbox) -> None:
    """A program that reaches the tracer through ``__import__`` (not an import statement)
    and patches it: the runner is replaced, the next program's result is its own."""
    forge = """def f():
    tracer = __import__("sys").modules["execbench.sandbox.tracer"]
    real = tracer.run
    def run(*args):
        result = real(*args)
        result.update(status="ok", exception=None, value=["str", "FORGED"])
        return result
    tracer.run = run
    return 1
"""
    assert _outcome(sandbox.run(Job(forge, "f", ""))) == 1
    honest = sandbox.run(Job("def g():\n    return 1 / 0\n", "g", ""))
    assert honest.status == "exception" and honest.exception["type"] == "ZeroDivisionError"


def test_a_thread_started_without_threading_does_not_outlive_its_call(sandbox: Sandbox) -> None:
    start = "import _thread, os, time\n\ndef f():\n" \
            "    _thread.start_new_thread(time.sleep, (30,))\n    return os.getpid()\n"
    pid = "import os\n\ndef g():\n    return os.getpid()\n"
    first = _outcome(sandbox.run(Job(start, "f", "")))
    assert _outcome(sandbox.run(Job(pid, "g", ""))) != first  # a fresh runner


@pytest.mark.parametrize("evade", [
    "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPROF})",
    "signal.setitimer(signal.ITIMER_PROF, 0)",
])
def test_a_program_that_stops_its_cpu_timer_still_times_out(evade: str) -> None:
    spin = f"import signal, time\n\ndef f():\n    {evade}\n" \
           "    end = time.process_time() + 0.6\n    while time.process_time() < end:\n" \
           "        pass\n    return 'finished'\n"
    loop = "def g():\n    while True:\n        pass\n"
    with Sandbox(workers=1, limits=Limits(cpu_seconds=0.3, wall_seconds=5)) as box:
        assert box.run(Job(spin, "f", "")).status == "timeout"
        assert box.run(Job(loop, "g", "")).status == "timeout"  # no mask carried over


@needs_seccomp
@pytest.mark.parametrize("call", [
    "resource.prlimit(os.getpid(), resource.RLIMIT_AS, (1 << 20, 1 << 20))",
    "os.setpriority(os.PRIO_PROCESS, os.getpid(), 19)",
    "os.setpriority(os.PRIO_PGRP, 0, 19)",
    "os.sched_setaffinity(os.getpid(), {0})",
    "os.chmod(os.environ['HOME'], 0)",
    "os.chmod('.', 0o777)",
    "socket.socketpair()",
])
def test_reaching_other_runners_or_the_shared_root_is_refused(sandbox: Sandbox,
                                                              call: str) -> None:
    """All runners share one user, so calls that name a process (by pid, group) are refused
    unless they name the caller by 0, and so is chmod (a runner could lock another
    worker's runners out of their folder); socketpair too (a datagram to a socket path)."""
    assert _attempt(sandbox, "os, resource, socket", call) == "PermissionError"
    assert _outcome(_run(sandbox, "import os\nreturn os.sched_getaffinity(0) != set()"))


def test_a_non_blocking_answers_pipe_or_a_locked_root_costs_nothing_later() -> None:
    spoilers = [f"os.set_blocking({ANSWERS_FD}, False)", "os.chmod(os.environ['HOME'], 0)",
                "os.chmod(os.environ['HOME'], 0); os._exit(0)"]
    with Sandbox(workers=1) as box:
        for spoil in spoilers:
            _run(box, f"import os\ntry:\n    {spoil}\nexcept OSError:\n    pass\nreturn 1")
            others = box.map(Job(f"def g():\n    return {i}\n", "g", "") for i in range(10))
            assert [_outcome(t) for t in others] == list(range(10)), spoil
        assert box.restarts == 0


def test_files_left_in_home_and_deep_trees_are_gone_before_the_next_call() -> None:
    litter = """import os
def f():
    open(os.path.join(os.environ['HOME'], 'left'), 'w').write('x' * 1000)
    for _ in range(1500):
        os.mkdir('d')
        os.chdir('d')
    return 1
"""
    look = "import os\n\ndef g():\n    return sorted(os.listdir(os.environ['HOME']))\n"
    with Sandbox(workers=1) as box:
        assert box.run(Job(litter, "f", "")).status == "ok"
        seen = decode(box.run(Job(look, "g", "")).value)
        assert len(seen) == 1 and "left" not in seen  # only the new call's own folder
        zygote = decode(box.run(Job("import os\n\ndef g():\n    return os.getppid()\n",
                                    "g", "")).value)
        root, = (found for base in ("/dev/shm", "/tmp")
                 for found in Path(base).glob(f"execbench-sandbox-{zygote}-*"))
    assert not root.exists()  # removed on close, deep tree and all


@pytest.mark.parametrize("junk", [
    f"os.write({ANSWERS_FD}, struct.pack('>I', 4001) + b'J' + b'[' * 4000)",
    "frame({'kind': 'result', 'seq': 'x', 'recycle': None, 'size': 10 ** 13})",
])
def test_protocol_junk_that_exhausts_the_parent_costs_one_call(junk: str) -> None:
    evil = ("import json, os, struct\n\n"
            "def frame(message):\n"
            "    body = b'J' + json.dumps(message).encode()\n"
            f"    os.write({ANSWERS_FD}, struct.pack('>I', len(body)) + body)\n\n"
            f"def f():\n    {junk}\n    return 1\n")
    with Sandbox(workers=1, limits=Limits(wall_seconds=2)) as box:
        futures = [box.submit(Job(evil, "f", ""))] + \
            [box.submit(Job(f"def g():\n    return {i}\n", "g", "")) for i in range(3)]
        traces = [future.result(timeout=60) for future in futures]
    assert traces[0].status in ("crashed", "timeout")
    assert [_outcome(t) for t in traces[1:]] == [0, 1, 2]


def test_sandbox_processes_die_with_their_parent(tmp_path: Path) -> None:
    """A parent killed outright (SIGKILL, the OOM killer) takes its zygotes and runners
    with it, even a runner that has switched its CPU timer off and sleeps."""
    script = tmp_path / "owner.py"
    script.write_text(
        "import time\nfrom execbench.sandbox.pool import Job, Sandbox\n"
        "box = Sandbox(workers=2)\n"
        "box.run(Job('def g():\\n    return 1\\n', 'g', ''))\n"
        "box.submit(Job('import signal, time\\ndef f():\\n"
        "    signal.setitimer(signal.ITIMER_PROF, 0)\\n    time.sleep(600)\\n', 'f', ''))\n"
        "print('ready', flush=True)\ntime.sleep(600)\n")
    owner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                             start_new_session=True, env=worker_environment())
    try:
        assert owner.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        group = _group_members(owner.pid)
        assert len(group) >= 3  # the owner, its zygotes, a runner
        owner.kill()
        owner.wait()
        eventually(lambda: not _group_members(owner.pid), "the owner's group has ended")
    finally:
        owner.kill()


def _group_members(group: int) -> set[int]:
    members = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_bytes().rpartition(b")")[2].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != b"Z":
            members.add(int(stat.parent.name))
    return members
