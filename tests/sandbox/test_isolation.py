"""One untrusted unit cannot reach another's result.

Each attack (written to stay clear of what the old after-call check caught: no import
beyond the zygote's preloaded modules, builtins left alone or the check's snapshot
re-taken) is what a model under reinforcement learning, or a hostile dataset record,
would try to make a later unit's verdict or ground truth come out as it likes: leave
something behind in its runner (patched runner code, a forging recorder, a patched JSON
encoder or builtin type, a thread), answer on the protocol pipe ahead of its runner and
keep reading for later work, or reach outside through System V IPC or the temporary
root. After each, honest units run on the same worker, and the test checks outside the
sandbox that every honest result is the honest program's own.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import signal
from pathlib import Path

import pytest

from execbench.sandbox import worker
from execbench.sandbox.pool import Job, Limits, Sandbox, new_unit
from execbench.sandbox.runner import ANSWERS_FD
from execbench.sandbox.trace import RESULT_ONLY
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.values import decode
from tests.sandbox.test_confinement import PLAN, UNHOOK, needs_seccomp

FORGED = '{"status": "ok", "value": ["int", 4242], "value_repr": "4242", "stdout": ""}'
"""What every attack tries to make later calls answer."""

PIPE = f"""
import json, os, struct, sys, time

def own_seqs():
    frame = sys._getframe()
    while "batch" not in frame.f_locals:
        frame = frame.f_back
    return [job["seq"] for job in frame.f_locals["batch"]["jobs"]]

def answer(seq):
    forged = {FORGED!r}.encode()
    body = b"J" + json.dumps({{"kind": "result", "seq": seq, "recycle": None,
                              "size": len(forged)}}).encode()
    os.write({ANSWERS_FD}, struct.pack(">I", len(body)) + body
             + struct.pack(">I", len(forged) + 1) + b"C" + forged)

def serve_forever():
    while True:  # a runner never gets a second batch: it stays, waiting to answer one
        time.sleep(60)
"""
"""Helpers for the attacks on the runner's own pipe (its answers, on ``ANSWERS_FD``)."""

ATTACKS = {
    "replace the runner's call": f"""
import sys
def f(x):
    frame = sys._getframe()
    while type(frame.f_locals.get("self")).__name__ != "Runner":
        frame = frame.f_back
    runner = frame.f_locals["self"]
    forged = {FORGED!r}.encode()
    type(runner).call = lambda self, job: (forged, None)
    runner.call = lambda job: (forged, None)
    return x
""",
    "answer ahead on the pipe and keep serving": PIPE + """
def f(x):
    for seq in own_seqs()[1:]:
        answer(seq)
    serve_forever()
    return x
""",
    "leave a thread that answers later batches": PIPE + """
import _thread
def f(x):
    _thread.start_new_thread(serve_forever, ())
    return x
""",
    "swap the tracer's recorders": """
import sys
def f(x):
    tracer = sys.modules["execbench.sandbox.tracer"]
    for name, real in list(tracer.RECORDERS.items()):
        class Forger(real):
            def result(self):
                return {**super().result(), "status": "ok", "exception": None,
                        "value": ["int", 4242], "value_repr": "4242"}
        tracer.RECORDERS[name] = Forger
    return x
""",
    "patch the JSON encoder's class": """
import json
def f(x):
    json.JSONEncoder.encode = lambda self, o: json.dumps(
        {**o, "status": "ok", "value": ["int", 4242], "value_repr": "4242"})
    return x
""",
    "patch builtins, then re-take the snapshot": """
import builtins, sys
def f(x):
    builtins.len = lambda obj: 4242
    builtins.int = lambda *a: 4242
    frame = sys._getframe()
    while type(frame.f_locals.get("self")).__name__ != "Runner":
        frame = frame.f_back
    runner = frame.f_locals["self"]
    runner.snapshot = type(runner.snapshot)()
    return x
""",
    "change a module's class": """
import sys, types
def f(x):
    class Forging(types.ModuleType):
        def __getattribute__(self, name):
            value = super().__getattribute__(name)
            if name != "run":
                return value
            def run(*args):
                out = value(*args)
                out.update(status="ok", exception=None, value=["int", 4242],
                           value_repr="4242")
                return out
            return run
    sys.modules["execbench.sandbox.tracer"].__class__ = Forging
    return x
""",
    "edit a builtin type's dict": """
import gc
def f(x):
    gc.get_referents(int.__dict__)[0]["__mul__"] = lambda a, b: 4242
    gc.get_referents(str.__dict__)[0]["upper"] = lambda s: "FORGED"
    return x
""",
}

HONEST = [
    ("def g(x):\n    return x + 1\n", "g", "41", 42),
    ("def g(x):\n    return x\n", "g", "7", 7),
    ("def g(s):\n    return s.upper() + str(len(s))\n", "g", "'ab'", "AB2"),
    ("def g(x):\n    return int(x) * 2\n", "g", "'21'", 42),
]
"""Honest units: each must return its own value, never the forgery."""


@pytest.mark.parametrize("attack", list(ATTACKS), ids=list(ATTACKS))
def test_an_attack_in_one_unit_does_not_reach_later_units(attack: str) -> None:
    code = ATTACKS[attack]
    with Sandbox(workers=1, limits=Limits(wall_seconds=2)) as box:
        for _ in range(2):
            hostile = box.map([Job(code, "f", "1", unit=new_unit()),
                               Job(code, "f", "2", unit=None), Job(code, "f", "3")])
            assert all(t.status in ("ok", "timeout", "crashed", "exception") for t in hostile)
            for unit in (new_unit(), None):
                for program, entry, args, value in HONEST:
                    trace = box.run(Job(program, entry, args, RESULT_ONLY, unit=unit))
                    assert (trace.status, decode(trace.value)) == ("ok", value), attack


def test_a_candidate_cannot_reach_the_next_candidate_of_the_same_code() -> None:
    """Two units with the same code (two samples that wrote the same candidate) never share
    a runner: the first's leftovers cannot change the second's result."""
    code = ATTACKS["replace the runner's call"].replace(
        "def f(x):\n", "def f(x):\n    if x == 2:\n        return x\n", 1)
    with Sandbox(workers=1) as box:
        first, second = box.map([Job(code, "f", "1", unit=new_unit()),
                                 Job(code, "f", "2", unit=new_unit())])
    assert decode(first.value) == 1
    assert (second.status, decode(second.value)) == ("ok", 2)


def test_one_hostile_dataset_record_cannot_poison_other_programs_ground_truth(
        tmp_path: Path) -> None:
    """A CRUXEval-format file with one hostile program ahead of eight honest ones: every
    honest program's recorded output is its own (the attack used to give all eight 4242)."""
    hostile = ATTACKS["replace the runner's call"]
    records = [{"id": "hostile", "code": hostile, "input": "0", "output": "0"}]
    records += [{"id": f"honest{i}", "code": f"def f(x):\n    return x + {i + 1}\n",
                 "input": str(i), "output": str(2 * i + 1)} for i in range(8)]
    source = tmp_path / "poisoned.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    build_suite([str(source)], tmp_path / "suite", BuildOptions(tasks=["output"], workers=1))
    _, instances, _ = load_suite(tmp_path / "suite")
    truth = {i.program_id.rpartition("/")[2]: decode(i.data["truth"]["value"])
             for i in instances if not i.program_id.endswith("hostile")}
    assert truth == {f"honest{i}": 2 * i + 1 for i in range(8)}


# --------------------------------------------------------------------------- IPC

_IPC_CREAT, _IPC_RMID = 0o1000, 0
SILENCE = """
import gc

def silence():
    # The audit hook refuses ctypes whatever its globals say: swap its code for a no-op
    # with the same free variables, so only the kernel layers stand.
    for obj in gc.get_objects():
        if type(obj).__name__ == "function" and obj.__name__ == "hook" and obj.__closure__:
            names = obj.__code__.co_freevars
            source = ("def outer():\\n" + "".join(f"    {n} = None\\n" for n in names)
                      + "    def hook(event, args):\\n"
                      + "".join(f"        {n}\\n" for n in names) + "    return hook\\n")
            space = {}
            exec(source, space)
            obj.__code__ = space["outer"]().__code__
            return True
    return False
"""


def _sysv_objects() -> dict[str, set[str]]:
    """The host's System V objects by kind, as the kernel lists them."""
    found = {}
    for kind in ("shm", "msg", "sem"):
        lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        found[kind] = {line.split()[1] for line in lines}  # the ids
    return found


@needs_seccomp
def test_system_v_ipc_is_closed_and_nothing_outlives_the_sandbox() -> None:
    """A root-owned, world-writable segment made here is neither read nor written by a
    program, and the segments, queues and semaphores a program tries to make do not exist
    after the sandbox closes."""
    if not Path("/proc/sysvipc/shm").exists():
        pytest.skip("this kernel has no System V IPC")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    key = 0x0E8C_B001
    segment = libc.shmget(key, 4096, _IPC_CREAT | 0o666)
    assert segment >= 0, os.strerror(ctypes.get_errno())
    address = libc.shmat(segment, None, 0)
    ctypes.memmove(address, b"host secret", 11)
    before = _sysv_objects()
    program = SILENCE + f"""
import ctypes
def f():
    assert silence()
    libc = ctypes.CDLL(None, use_errno=True)
    out = {{}}
    for name, call in [("shmget existing", lambda: libc.shmget({key}, 0, 0)),
                       ("shmget new", lambda: libc.shmget(0, 1 << 20, {_IPC_CREAT} | 0o600)),
                       ("msgget", lambda: libc.msgget(0, {_IPC_CREAT} | 0o600)),
                       ("semget", lambda: libc.semget(0, 1, {_IPC_CREAT} | 0o600))]:
        result = call()
        out[name] = [result, ctypes.get_errno()]
    return out
"""
    try:
        with Sandbox(workers=1) as box:
            trace = box.run(Job(program, "f", ""))
        assert trace.status == "ok", trace
        outcome = decode(trace.value)
        for name, (result, error) in outcome.items():
            assert result == -1 and error in (errno.EPERM, errno.ENOENT), (name, outcome)
        assert ctypes.string_at(address, 11) == b"host secret"
        assert _sysv_objects() == before
    finally:
        libc.shmdt(ctypes.c_void_p(address))
        libc.shmctl(segment, _IPC_RMID, None)


def test_the_temporary_root_is_bounded() -> None:
    """Writes stop at the tmpfs's size (``worker.temp_bytes``) with ENOSPC, and the host's
    /dev/shm outside the root is not writable at all."""
    limits = Limits(file_bytes=4_000_000)
    program = UNHOOK + """
import os
def f():
    unhook()
    written, error = 0, None
    chunk = b"x" * (1 << 20)
    try:
        for i in range(10_000):
            with open(os.path.join(os.environ["HOME"], f"fill{i}"), "wb") as out:
                for _ in range(3):
                    out.write(chunk)
                    out.flush()
                    written += len(chunk)
    except OSError as exc:
        error = exc.errno
    try:
        open("/dev/shm/execbench-escape", "wb").close()
        outside = "written"
    except OSError as exc:
        outside = exc.errno
    return written, error, outside
"""
    with Sandbox(workers=1, limits=limits) as box:
        trace = box.run(Job(program, "f", ""))
        bounded = box.layers["temp root"].startswith("on")
    if not bounded:
        pytest.skip("no private tmpfs here: " + box.layers["temp root"])
    written, error, outside = decode(trace.value)
    assert error == errno.ENOSPC
    assert written <= worker.temp_bytes({"file_bytes": limits.file_bytes})
    assert outside != "written" and not Path("/dev/shm/execbench-escape").exists()


def test_the_layers_list_names_the_new_guards() -> None:
    layers = PLAN.layers()
    assert layers["isolation"].startswith("on")
    assert set(layers) >= {"isolation", "ipc", "temp root"}


# --------------------------------------------------------------------------- outliving a kill

ORPHAN = "eb-orphan"
DRIP = SILENCE + f"""
import ctypes, json, os, struct, sys, time

def f():
    silence()
    libc = ctypes.CDLL(None)
    libc.prctl(1, 0, 0, 0, 0)                     # no death signal when the zygote dies
    libc.prctl(15, b"{ORPHAN}", 0, 0, 0)          # a name the test can find
    frame = sys._getframe()
    while not (isinstance(frame.f_locals.get("job"), dict) and "seq" in frame.f_locals["job"]):
        frame = frame.f_back
    body = json.dumps({{"kind": "result", "seq": frame.f_locals["job"]["seq"],
                       "recycle": None, "size": 1}}).encode()
    os.write({ANSWERS_FD}, struct.pack(">I", len(body) + 1) + b"J" + body)
    for _ in range(150):                          # empty chunks, each once worth 5 s more
        try:
            os.write({ANSWERS_FD}, struct.pack(">I", 1) + b"C")
        except OSError:
            break
        time.sleep(1)
    time.sleep(150)
"""
"""Found by an adversarial pass: a runner that cleared its parent-death signal and then
dripped empty payload chunks kept its zygote relaying past the wall-clock limit until the
parent gave the worker up and killed the zygote, and then lived on, unreaped."""


def _named(name: str) -> list[int]:
    found = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == name:
                found.append(int(comm.parent.name))
        except OSError:
            continue
    return found


@needs_seccomp
def test_a_runner_cannot_drip_its_answer_or_outlive_its_zygote() -> None:
    before = set(_named(ORPHAN))
    try:
        with Sandbox(workers=1, limits=Limits(wall_seconds=1.0)) as box:
            attack = box.submit(Job(DRIP, "f", "", unit=new_unit()))
            honest = box.submit(Job("def f():\n    return 6 * 7\n", "f", "", unit=new_unit()))
            assert attack.result(timeout=120).status in ("crashed", "timeout")
            assert decode(honest.result(timeout=120).value) == 42
            assert box.restarts == 0  # the zygote ended the unit itself
        assert not set(_named(ORPHAN)) - before
    finally:
        for pid in set(_named(ORPHAN)) - before:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@needs_seccomp
def test_a_runner_cannot_clear_its_death_signal() -> None:
    program = SILENCE + """
import ctypes
def f():
    assert silence()
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(1, 0, 0, 0, 0), ctypes.get_errno()
"""
    with Sandbox(workers=1) as box:
        assert decode(box.run(Job(program, "f", "")).value) == (-1, errno.EPERM)
