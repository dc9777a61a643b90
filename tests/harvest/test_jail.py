"""The harvest ``jail``: a hostile project's tests try every way out of ``execbench harvest``,
and this process (outside the jail) checks that none worked.

The attacks report what they got through the one channel they have: the arguments of a
project function (``leak``), which the harvest records. Every check that matters is made
here, on this machine's state: the secret in this process's environment, a listener on
127.0.0.1, the original project's bytes, a marker a daemon would write, the host's System V
IPC objects, the processes left. The attacks hold only where the jail's layers are on
(root, Landlock, libseccomp: as CI runs); elsewhere they are skipped with the reason.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from execbench.harvest import jail
from execbench.harvest.options import HarvestOptions, HarvestResult
from execbench.harvest.project import harvest
from execbench.harvest.records import (
    REFUSED_DUPLICATE,
    REFUSED_FUNCTION,
    REFUSED_JAIL,
    REFUSED_NOT_JSON,
    REFUSED_ORDINAL,
    REFUSED_SLOT,
)
from tests.helpers.harvests import processes_with

SECRET = "sk-harvest-jail-test-3f9c2a"
# Named after this test process, so that two test runs at once use different ones.
IPC_KEY = 0x5EED0000 + os.getpid() % 0x10000
TOKEN = f"execbench-daemon-token-{os.getpid()}"

CORE = '''\
def leak(route, outcome):
    said = route + ": " + outcome
    return said


def clamp(x, low, high):
    if x < low:
        return low
    return min(x, high)
'''

ATTACKS = '''\
import ctypes
import errno
import json
import os
import socket
import stat
import sys
import tempfile

from pkg.core import clamp, leak

OUTER, PORT = {outer}, {port}
OUTSIDE, ORIGINAL, MARKER, OUT = {outside!r}, {original!r}, {marker!r}, {out!r}
IPC_KEY, TOKEN, UNIX_SOCKET = {ipc_key}, {token!r}, {unix_socket!r}
libc = ctypes.CDLL(None, use_errno=True)


def refused(exc):
    return "refused " + errno.errorcode.get(exc.errno or 0, type(exc).__name__)


def attempt(action):
    try:
        return "done " + str(action())[:200]
    except OSError as exc:
        return refused(exc)


def test_aa_honest_calls():
    assert [clamp(x, 0, 5) for x in (-1, 3, 9)] == [0, 3, 5]


def test_parent_environment():
    seen = []
    for pid in [p for p in os.listdir("/proc") if p.isdigit()] + [str(OUTER)]:
        try:
            with open(f"/proc/{{pid}}/environ", "rb") as handle:
                seen.append(handle.read().decode(errors="replace"))
        except OSError:
            pass
    parent = attempt(lambda: open(f"/proc/{{os.getppid()}}/environ", "rb").read())
    leak("environ", parent)
    leak("environ seen", " ".join(seen))


def test_parent_memory_and_signals():
    for name, pid in (("mem", os.getppid()), ("outer mem", OUTER)):
        leak(name, attempt(lambda: open(f"/proc/{{pid}}/mem", "r+b")))
    leak("kill", attempt(lambda: os.kill(os.getppid(), 0)))
    leak("outer kill", attempt(lambda: os.kill(OUTER, 0)))
    leak("ptrace", "refused" if libc.ptrace(16, os.getppid(), 0, 0) == -1 else "attached")


def test_network_namespaces():
    joined = []
    for pid in [p for p in os.listdir("/proc") if p.isdigit()] + [str(OUTER)]:
        try:
            fd = os.open(f"/proc/{{pid}}/ns/net", os.O_RDONLY)
        except OSError:
            continue
        if libc.setns(fd, 0x40000000) == 0:
            joined.append(pid)
        os.close(fd)
    leak("setns", "joined " + ",".join(joined) if joined else "refused")
    leak("unshare", "refused" if libc.unshare(0x10000000 | 0x40000000) == -1 else "done")
    leak("connect", attempt(lambda: socket.create_connection(("127.0.0.1", PORT), 2)))

    def unix():
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(UNIX_SOCKET)

    leak("unix socket", attempt(unix))


def test_files_outside():
    leak("outside", attempt(lambda: open(OUTSIDE).read()))
    leak("hostname", attempt(lambda: open("/etc/hostname").read()))
    leak("root home", attempt(lambda: os.listdir("/root")))
    leak("original read", attempt(lambda: open(ORIGINAL + "/pkg/core.py").read()))
    leak("original write", attempt(lambda: open(ORIGINAL + "/pkg/core.py", "a").write("#")))
    leak("original create", attempt(lambda: open(ORIGINAL + "/pwned.txt", "w").write("x")))


def test_sizes():
    def big():
        with open("big.bin", "wb") as handle:
            handle.write(b"x" * (2 << 20))

    def fill():
        for i in range(16):
            with open(os.path.join(tempfile.gettempdir(), f"fill{{i}}"), "wb") as handle:
                handle.write(b"x" * (512 << 10))

    leak("big file", attempt(big))
    leak("temp fill", attempt(fill))


def test_ipc():
    made = []
    for name, call in (("shm", lambda: libc.shmget(IPC_KEY, 12345, 0o1666)),
                       ("msg", lambda: libc.msgget(IPC_KEY, 0o1666)),
                       ("sem", lambda: libc.semget(IPC_KEY, 1, 0o1666)),
                       ("mq", lambda: libc.mq_open(b"/" + TOKEN.encode(), os.O_CREAT | os.O_RDWR,
                                                   ctypes.c_int(0o600), None))):
        if call() != -1:
            made.append(name)
    leak("ipc", "made " + ",".join(made) if made else "refused")


def test_identity():
    with open("/proc/self/status") as handle:
        status = dict(line.split(":", 1) for line in handle if ":" in line)
    leak("identity", " ".join(f"{{key}}={{status[key].split()[0]}}"
                              for key in ("Uid", "CapEff", "CapPrm", "NoNewPrivs", "Seccomp")))


DAEMON = """
import os, sys, time
time.sleep(3)
for path in sys.argv[1:3]:
    try:
        with open(path, "a") as handle:
            handle.write("the daemon was here")
    except OSError:
        pass
"""


def test_daemon():
    pid = os.fork()
    if pid == 0:
        if os.fork() == 0:
            os.setsid()
            os.execv(sys.executable, [sys.executable, "-c", DAEMON, MARKER, OUT, TOKEN])
        os._exit(0)
    os.waitpid(pid, 0)
    leak("daemon", "started")


def test_zz_forged_records():
    pipes = []
    for fd in range(3, 256):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                pipes.append(fd)
        except OSError:
            pass
    trace = {{"status": "ok", "value": ["str", "FORGED"], "value_repr": "'FORGED'"}}
    forged = [
        {{"kind": "call", "function": "pkg.core.clamp", "slot": 0, "ordinal": 10**9,
          "args": "'FORGED', 0, 1", "trace": trace}},
        {{"kind": "call", "function": "pkg.core.clamp", "slot": 0, "ordinal": 1,
          "args": "'FORGED', 1, 1", "trace": trace}},
        {{"kind": "call", "function": "pkg.core.clamp", "slot": 99, "ordinal": 10**6,
          "args": "'FORGED', 2, 1", "trace": trace}},
        {{"kind": "call", "function": "os.system", "slot": 0, "ordinal": 1,
          "args": "'FORGED'", "trace": trace}},
        {{"kind": "jail", "layers": {{"user": "on: FORGED"}}, "warnings": []}},
    ]
    for fd in pipes:
        os.write(fd, "".join(json.dumps(record) + "\\n" for record in forged).encode())
        os.write(fd, b"FORGED, not json\\n")
    leak("forged", f"on {{len(pipes)}} pipes")
'''


def _tree(root: Path) -> dict[str, str]:
    return {str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
            if path.is_file() else "folder" for path in sorted(root.rglob("*"))}


def _open_folder() -> Path:
    """A folder every user may enter, read and write: only the jail keeps the tests out."""
    folder = Path(tempfile.mkdtemp(prefix="execbench-jail-test-"))
    folder.chmod(0o777)
    return folder


def _ipc_keys() -> set[int]:
    keys = set()
    for kind in ("shm", "msg", "sem"):
        path = Path("/proc/sysvipc") / kind
        if path.exists():
            keys |= {int(line.split()[0]) for line in path.read_text().splitlines()[1:]}
    return keys


def _leaks(out: Path) -> dict[str, str]:
    records = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    said = {}
    for call in records["pkg.core.leak"]["calls"]:
        route, outcome = ast.literal_eval(f"({call['args']},)")
        said[route] = outcome
    return said


@pytest.fixture(scope="module")
def layers() -> dict[str, str]:
    found = jail.layers()
    off = {name: state for name, state in found.items() if not state.startswith("on")}
    if off:
        pytest.skip(f"this machine lacks jail layers: {off}")
    return found


@pytest.fixture(scope="module")
def attacked(layers: dict[str, str]) -> Iterator[dict]:
    """One harvest of the hostile project, with what this process saw before and after."""
    folder = _open_folder()
    try:
        project = folder / "project"
        (project / "pkg").mkdir(parents=True)
        (project / "pkg" / "__init__.py").write_text("")
        (project / "pkg" / "core.py").write_text(CORE)
        (project / "tests").mkdir()
        outside = folder / "outside.txt"
        outside.write_text(SECRET)
        out = folder / "out.jsonl"
        marker = folder / "marker.txt"
        for path in [project, *project.rglob("*")]:
            path.chmod(0o777 if path.is_dir() else 0o666)
        outside.chmod(0o644)
        ipc_before = _ipc_keys()
        unix_socket = f"/run/{TOKEN}.sock"
        with socket.socket() as listener, socket.socket(socket.AF_UNIX) as service, \
                pytest.MonkeyPatch.context() as patch:
            patch.setenv("EXECBENCH_TEST_SECRET", SECRET)
            listener.bind(("127.0.0.1", 0))
            listener.listen()
            service.bind(unix_socket)  # a host service anyone may connect to
            os.chmod(unix_socket, 0o777)
            service.listen()
            (project / "tests" / "test_attacks.py").write_text(ATTACKS.format(
                outer=os.getpid(), port=listener.getsockname()[1], outside=str(outside),
                original=str(project), marker=str(marker), out=str(out), ipc_key=IPC_KEY,
                token=TOKEN, unix_socket=unix_socket))
            before = _tree(project)
            result = harvest(project, out, HarvestOptions(
                max_calls=50, max_file_bytes=1 << 20, max_temp_bytes=4 << 20))
            left = processes_with(TOKEN)
            connected = []
            for server in (listener, service):
                server.setblocking(False)
                try:
                    server.accept()[0].close()
                    connected.append(server.family)
                except BlockingIOError:
                    pass
        written = out.read_bytes()
        time.sleep(4)  # the daemon would have written by now
        yield {"result": result, "out": out, "written": written, "before": before,
               "after": _tree(project), "project": project, "marker": marker,
               "left": left, "connected": connected, "ipc_before": ipc_before,
               "ipc_after": _ipc_keys(), "leaks": _leaks(out)}
    finally:
        shutil.rmtree(folder)
        Path(f"/run/{TOKEN}.sock").unlink(missing_ok=True)


def test_the_hostile_suite_ran_and_reported(attacked: dict) -> None:
    result: HarvestResult = attacked["result"]
    assert result.pytest_exit == 0, result.log
    assert set(attacked["leaks"]) >= {"environ", "mem", "kill", "setns", "outside",
                                      "big file", "ipc", "identity", "daemon", "forged"}


def test_the_parents_environment_never_reaches_the_tests(attacked: dict) -> None:
    assert SECRET not in attacked["out"].read_text()
    assert SECRET not in attacked["result"].log
    assert attacked["leaks"]["environ"].startswith("refused")


def test_the_parent_is_out_of_reach(attacked: dict) -> None:
    leaks = attacked["leaks"]
    for route in ("mem", "outer mem", "kill", "outer kill", "ptrace"):
        assert leaks[route].startswith("refused"), (route, leaks[route])


def test_no_way_into_the_parents_network(attacked: dict) -> None:
    leaks = attacked["leaks"]
    assert leaks["setns"] == "refused" and leaks["unshare"] == "refused"
    assert leaks["connect"].startswith("refused")
    assert leaks["unix socket"].startswith("refused")
    assert attacked["connected"] == []


def test_files_outside_the_scratch_copy_are_out_of_reach(attacked: dict) -> None:
    leaks = attacked["leaks"]
    for route in ("outside", "hostname", "root home", "original read", "original write",
                  "original create"):
        assert leaks[route].startswith("refused"), (route, leaks[route])
    assert attacked["after"] == attacked["before"]  # byte for byte, no file added


def test_file_and_temp_sizes_are_bounded(attacked: dict) -> None:
    assert attacked["leaks"]["big file"] == "refused EFBIG"
    assert attacked["leaks"]["temp fill"] == "refused ENOSPC"


def test_no_ipc_object_survives(attacked: dict) -> None:
    assert attacked["leaks"]["ipc"] == "refused"
    assert IPC_KEY not in attacked["ipc_before"] | attacked["ipc_after"]
    assert not Path("/dev/mqueue", TOKEN).exists()


def test_the_tests_run_unprivileged(attacked: dict) -> None:
    identity = dict(part.split("=") for part in attacked["leaks"]["identity"].split())
    assert identity == {"Uid": "65534", "CapEff": "0" * 16, "CapPrm": "0" * 16,
                        "NoNewPrivs": "1", "Seccomp": "2"}


def test_no_daemon_outlives_the_harvest(attacked: dict) -> None:
    assert attacked["leaks"]["daemon"] == "started"
    assert attacked["left"] == [] and processes_with(TOKEN) == []
    assert not attacked["marker"].exists()
    assert attacked["out"].read_bytes() == attacked["written"]


def test_forged_records_are_refused_and_counted(attacked: dict) -> None:
    result: HarvestResult = attacked["result"]
    assert attacked["leaks"]["forged"] == "on 1 pipes"
    assert "FORGED" not in attacked["out"].read_text()
    assert result.refused == {REFUSED_ORDINAL: 1, REFUSED_DUPLICATE: 1, REFUSED_SLOT: 1,
                              REFUSED_FUNCTION: 1, REFUSED_JAIL: 1, REFUSED_NOT_JSON: 1}
    records = {r["id"]: r for r in map(json.loads, attacked["out"].read_text().splitlines())}
    assert sorted(c["args"] for c in records["pkg.core.clamp"]["calls"]) == \
        ["-1, 0, 5", "3, 0, 5", "9, 0, 5"]


MULTIPROCESSING_TESTS = '''\
import multiprocessing
import subprocess
import sys

from pkg.core import clamp


def square(x):
    return x * x


def test_pool_and_queue():
    with multiprocessing.Pool(2) as pool:
        assert pool.map_async(square, range(10)).get(60) == [x * x for x in range(10)]
    queue = multiprocessing.Queue()
    worker = multiprocessing.Process(target=queue.put, args=(clamp(7, 0, 5),))
    worker.start()
    assert queue.get(timeout=30) == 5
    worker.join(60)


def test_spawned_interpreter():
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        assert pool.apply_async(abs, (-3,)).get(60) == 3
    done = subprocess.run([sys.executable, "-c", "print(2 + 2)"], capture_output=True,
                          text=True, check=True)
    assert done.stdout == "4\\n"
    assert clamp(-4, 0, 5) == 0
'''


def test_a_suite_with_multiprocessing_still_harvests(layers: dict[str, str],
                                                    tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "core.py").write_text(CORE)
    (project / "tests").mkdir()
    (project / "tests" / "test_workers.py").write_text(MULTIPROCESSING_TESTS)
    result = harvest(project, tmp_path / "out.jsonl", HarvestOptions(timeout=300))
    assert result.pytest_exit == 0, result.log
    assert not result.refused and not result.jail_warnings
    records = {r["id"]: r for r in map(json.loads, (tmp_path / "out.jsonl").read_text()
                                       .splitlines())}
    assert {c["args"] for c in records["pkg.core.clamp"]["calls"]} == {"7, 0, 5", "-4, 0, 5"}


def test_layers_name_each_layer_once() -> None:
    found = jail.layers()
    assert list(found) == ["namespaces", "network", "temp folder", "proc", "file size",
                           "landlock", "user", "seccomp", "environment"]
    assert all(state.startswith(("on", "off")) for state in found.values())
    assert found["file size"] == f"on: files of at most {jail.MAX_FILE_BYTES >> 20} MiB"
