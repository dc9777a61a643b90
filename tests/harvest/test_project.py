"""``harvest``: a hand-written project with a pytest suite, harvested in a child process.

The child runs this interpreter (it has pytest). The slow test harvests the three real
projects in ../shared/data/projects and builds suites from them.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tarfile
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from execbench.harvest.channel import REFUSED_CUT, REFUSED_LONG
from execbench.harvest.listing import Function
from execbench.harvest.many import harvest_projects, projects_from
from execbench.harvest.options import HarvestError, HarvestOptions
from execbench.harvest.project import NEVER_CALLED, harvest
from execbench.harvest.records import (
    REFUSED_AFTER_END,
    REFUSED_DUPLICATE,
    REFUSED_FUNCTION,
    REFUSED_JAIL,
    REFUSED_MALFORMED,
    REFUSED_NOT_JSON,
    REFUSED_ORDINAL,
    REFUSED_SLOT,
    Records,
)
from execbench.runner import RunConfig, run
from execbench.sandbox.trace import Trace
from execbench.suite import BuildOptions, build_suite
from execbench.tasks.common.objects import UNSHOWN
from execbench.values import parse_call_nodes, tags, to_literal
from tests.helpers.data import needs_shared_data
from tests.helpers.harvests import ARCHIVES, LocalHarvest, unpacked

CORE = '''\
"""A tiny project for the harvest tests."""

SCALE = 3


def clamp(x, low, high):
    # keep x within bounds
    if x < low:
        return low
    if x > high:
        return high
    return x


def total(xs):
    acc = 0
    for x in xs:
        acc += clamp(x, 0, 10) * SCALE
    return acc


def only_comment():
    # nothing here
    pass


def one(x):
    return x + 1


def wrapper(xs):
    return total(xs)


class Box:
    def __init__(self, items):
        self.items = list(items)
        self.size = len(self.items)

    @staticmethod
    def pair(a, b):
        first = min(a, b)
        return (first, max(a, b))


def make_box(n):
    items = list(range(n))
    return Box(items)


def fails(x):
    if x < 0:
        raise ValueError("negative")
    return x * 2


def count_up(n):
    for i in range(n):
        yield i
'''

TESTS = '''\
import pytest

from pkg.core import Box, clamp, count_up, fails, make_box, one, only_comment, total, wrapper


def helper(x):
    y = x + 1
    return y * 2


def test_total():
    assert total([1, 2, 30]) == 39
    assert wrapper([5]) == 15


def test_many_clamps():
    for i in range(60):
        clamp(i, 5, 20)


def test_small_things(doubled):
    only_comment()
    assert one(1) == 2
    assert helper(doubled) == 10
    assert Box.pair(3, 1) == (1, 3)
    assert list(count_up(3)) == [0, 1, 2]


def test_box():
    assert make_box(3).size == 3


def test_fails():
    with pytest.raises(ValueError):
        fails(-1)
    assert fails(2) == 4
    assert fails(2) == 4
'''

CONFTEST = '''\
import pytest


def conf_helper(x):
    y = x * 2
    return y


@pytest.fixture
def doubled():
    return conf_helper(2)
'''


def make_project(root: Path, extra_tests: str = "") -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "core.py").write_text(CORE)
    (root / "tests").mkdir()
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "conftest.py").write_text(CONFTEST)
    (root / "tests" / "test_core.py").write_text(TESTS + extra_tests)
    return root


def read(path: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines())}


@pytest.fixture(scope="module")
def harvested(tmp_path_factory: pytest.TempPathFactory):
    root = make_project(tmp_path_factory.mktemp("tiny") / "project")
    out = root.parent / "harvest.jsonl"
    updates: list[dict] = []
    result = harvest(root, out, HarvestOptions(max_calls=4), progress=updates.append)
    return root, out, result, updates


def test_records_calls_of_the_projects_own_functions_only(harvested) -> None:
    _, out, result, updates = harvested
    records = read(out)
    # conftest.py and the test file are not the project's source; one-statement,
    # comment-only, wrapper and generator functions are filtered out. A method is kept,
    # its ``self`` an object shown by its attributes.
    assert sorted(records) == ["pkg.core.Box.__init__", "pkg.core.Box.pair",
                               "pkg.core.clamp", "pkg.core.fails", "pkg.core.make_box",
                               "pkg.core.total"]
    assert result.pytest_exit == 0 and not result.timed_out and result.tests == (5, 5)
    assert result.functions == {"kept": 6, "one statement": 1, "wrapper of another call": 1,
                                "no statements (comments, docstring or pass only)": 1,
                                "generator or coroutine": 1}
    assert NEVER_CALLED not in result.functions
    assert updates and updates[-1]["calls"] == result.calls["kept"]

    pair = records["pkg.core.Box.pair"]
    assert pair["code"].startswith("def pair(a, b):\n    first")  # dedented, no decorator
    assert pair["meta"] == {"file": "pkg/core.py",
                            "line": CORE.splitlines().index("    def pair(a, b):") + 1}


def test_a_trace_is_the_sandbox_schema_renumbered_to_the_function(harvested) -> None:
    _, out, _, _ = harvested
    total = read(out)["pkg.core.total"]
    assert total["code"].splitlines()[0] == "def total(xs):"
    [call] = [c for c in total["calls"] if c["args"] == "[1, 2, 30]"]
    trace = Trace.from_dict(call["trace"])
    assert (trace.status, trace.value, trace.value_repr) == ("ok", ["int", 39], "39")
    assert trace.args == [["list", [["int", 1], ["int", 2], ["int", 30]]]]
    assert trace.frames == [{"function": "total", "line": 1}]
    assert trace.lines == [2, 3, 4, 5]
    assert trace.events == [[2, 0], [3, 0], [4, 0], [3, 0], [4, 0], [3, 0], [4, 0], [3, 0],
                            [5, 0]]
    assert trace.loops == {"3": 3} and trace.branches["3"]["seq"] == "TTTF"
    # Locals before each line, in the one frame; clamp's own frame is not in this trace.
    assert trace.states[0] == {"line": 2, "frame": 0,
                               "locals": {"xs": ["list", [["int", 1], ["int", 2], ["int", 30]]]}}
    assert trace.states[-1]["locals"]["acc"] == ["int", 39]
    assert {s["frame"] for s in trace.states} == {0}


def test_exceptions_opaque_values_sampling_and_duplicates(harvested) -> None:
    _, out, result, _ = harvested
    records = read(out)
    fails = {c["args"]: c["trace"] for c in records["pkg.core.fails"]["calls"]}
    assert fails["-1"]["status"] == "exception"
    assert fails["-1"]["exception"] == {"type": "ValueError", "message": "negative",
                                        "phase": "call"}
    assert fails["-1"]["lines"] == [2, 3]
    assert fails["2"]["value"] == ["int", 4]

    [box] = records["pkg.core.make_box"]["calls"]
    three = ["list", [["int", 0], ["int", 1], ["int", 2]]]
    assert box["trace"]["value"] == ["instance", "Box", [["items", three],
                                                         ["size", ["int", 3]]]]
    assert box["trace"]["value_repr"] == "Box(items=[0, 1, 2], size=3)"
    [init] = records["pkg.core.Box.__init__"]["calls"]
    assert init["args"] == "Box(), range(0, 3)" or init["args"] == "Box(), [0, 1, 2]"

    clamps = records["pkg.core.clamp"]["calls"]
    assert len(clamps) == 4 and len({c["args"] for c in clamps}) == 4
    assert result.calls["kept"] == sum(len(r["calls"]) for r in records.values())
    assert result.calls["not sampled"] > 0
    assert result.calls["repeated arguments"] >= 1  # fails(2), twice
    assert result.calls["its function was filtered out"] >= 4
    assert sum(result.calls.values()) == result.seen  # every call is counted once


def test_recorded_values_agree_with_an_independent_recording(harvested, tmp_path) -> None:
    """A plain ``sys.setprofile`` recorder, run on the same test suite, logs each call of
    the project's functions with its arguments and return value; every harvested call
    that returned must be among them."""
    root, out, _, _ = harvested
    log = tmp_path / "log.jsonl"
    script = textwrap.dedent(f'''
        import json, sys
        import pytest
        sys.path.insert(0, {str(root)!r})
        stack, calls = [], []

        def profile(frame, event, arg):
            code = frame.f_code
            if event not in ("call", "return") or not code.co_filename.endswith("core.py"):
                return
            if event == "call":
                names = code.co_varnames[:code.co_argcount]
                stack.append((code.co_name, [repr(frame.f_locals[n]) for n in names]))
            else:
                name, args = stack.pop()
                calls.append([name, ", ".join(args), repr(arg)])

        sys.setprofile(profile)
        pytest.main(["-q", "-p", "no:cacheprovider", {str(root)!r}])
        sys.setprofile(None)
        open({str(log)!r}, "w").write(json.dumps(calls))
    ''')
    subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, timeout=120,
                   check=True)
    seen = {(name, args): value for name, args, value in json.loads(log.read_text())}
    checked = 0
    for record in read(out).values():
        for call in record["calls"]:
            trace = call["trace"]
            if trace["status"] != "ok":
                continue
            objects = set().union(*map(tags, [trace["value"], *trace["args"]]))
            if not objects & {"object", "instance"}:
                assert seen[(record["entry_point"], call["args"])] == trace["value_repr"]
                checked += 1
    assert checked >= 8


def test_a_failing_suite_still_yields_its_records(tmp_path: Path) -> None:
    """Also: a process a test forks inherits the tracer but writes no records."""
    root = make_project(tmp_path / "project", textwrap.dedent("""

        def test_broken():
            assert total([4]) == 0


        def test_forked():
            import os
            pid = os.fork()
            if pid == 0:
                for i in range(100):
                    total([i, 99])
                os._exit(0)
            os.waitpid(pid, 0)
        """))
    result = harvest(root, tmp_path / "out.jsonl", HarvestOptions())
    assert result.pytest_exit == 1 and result.tests == (7, 7)
    assert "1 failed" in result.log
    total = read(tmp_path / "out.jsonl")["pkg.core.total"]
    assert {c["args"] for c in total["calls"]} == {"[1, 2, 30]", "[5]", "[4]"}


def test_a_hanging_suite_is_stopped_at_the_timeout_with_what_it_recorded(tmp_path: Path
                                                                          ) -> None:
    spin = "\n\ndef spin(n):\n    while n >= 0:\n        n += 1\n    return n\n"
    root = make_project(tmp_path / "project", "\n\ndef test_zz_hangs():\n"
                        "    from pkg.core import spin\n    spin(0)\n")
    (root / "pkg" / "core.py").write_text(CORE + spin)
    result = harvest(root, tmp_path / "out.jsonl", HarvestOptions(timeout=6))
    # The suite never ends by itself: harvest returning at all, saying so, is the stop.
    assert result.timed_out and result.pytest_exit is None
    assert result.tests == (5, 6)
    records = read(tmp_path / "out.jsonl")
    assert "pkg.core.total" in records and "pkg.core.spin" not in records
    assert result.calls["the run ended during the call"] == 1


def test_a_test_that_hangs_costs_only_itself(tmp_path: Path) -> None:
    """Issue #24 item 2: a test blocked on a lock forever, and one spinning in a project
    function, each fail at their own limit; the tests after them run, and a call the
    limit cut is not recorded (it did not end the way the function ends)."""
    spin = "\n\ndef spin(n):\n    while n >= 0:\n        n += 1\n    return n\n"
    root = make_project(tmp_path / "project", textwrap.dedent("""

        def test_h1_blocks_forever():
            import threading
            threading.Lock().acquire() or threading.Event().wait()
            lock = threading.Lock()
            lock.acquire()
            lock.acquire()


        def test_h2_spins():
            from pkg.core import spin
            spin(0)


        def test_h3_after():
            assert total([7, 8]) == 45
        """))
    (root / "pkg" / "core.py").write_text(CORE + spin)
    result = harvest(root, tmp_path / "out.jsonl", HarvestOptions(test_timeout=1.5))
    assert not result.timed_out and result.pytest_exit == 1 and result.tests == (8, 8)
    assert result.hung == ["tests/test_core.py::test_h1_blocks_forever",
                           "tests/test_core.py::test_h2_spins"]
    assert "2 failed" in result.log and "TestTimeout" in result.log
    records = read(tmp_path / "out.jsonl")
    assert "[7, 8]" in {c["args"] for c in records["pkg.core.total"]["calls"]}
    assert "pkg.core.spin" not in records
    assert result.calls["its test ran past its time limit during the call"] == 1


def test_the_limit_never_lands_in_the_recorder_or_between_a_tests_phases(tmp_path: Path
                                                                        ) -> None:
    """A test spinning on sampled calls spends much of its time in the recorder (and the
    standard library code it calls): the limit must wait for the test's own code, or the
    trace function would be dropped and nothing after it recorded. Tests that end right at
    their limit must not have it raised into pytest between their phases, which would end
    the session. A test that resets ``SIGALRM`` does not take the limit away from the
    next one."""
    near = "".join(f"\n\ndef test_n{k:02d}():\n    time.sleep({0.3 - 0.0003 * k})\n"
                   for k in range(20))
    root = make_project(tmp_path / "project", textwrap.dedent("""

        import signal
        import time


        def test_h1_spins_on_recorded_calls():
            i = 0
            while True:
                clamp(i, 0, 10)
                i += 1


        def test_h2_after():
            from pkg.core import late
            assert late(3) == 10


        def test_h3_resets_the_alarm():
            signal.signal(signal.SIGALRM, signal.SIG_DFL)


        def test_h4_sleeps():
            time.sleep(60)
        """) + near)
    late = "\n\ndef late(x):\n    y = x * 3\n    return y + 1\n"
    (root / "pkg" / "core.py").write_text(CORE + late)
    result = harvest(root, tmp_path / "out.jsonl",
                     HarvestOptions(test_timeout=0.3, max_calls=3))
    assert result.pytest_exit == 1 and not result.stopped and result.tests == (29, 29), \
        result.log
    assert result.hung[:2] == ["tests/test_core.py::test_h1_spins_on_recorded_calls",
                               "tests/test_core.py::test_h4_sleeps"]
    assert "INTERNALERROR" not in result.log
    # still recording after the limit: the one call of a function only h2 calls is kept
    # (total's calls would not do: which of them its sample keeps depends on h1's count)
    assert [c["args"] for c in read(tmp_path / "out.jsonl")["pkg.core.late"]["calls"]] == ["3"]


def test_an_archive_with_a_link_is_refused_whole(tmp_path: Path) -> None:
    """Archives are unpacked outside the jail: links (how archives have escaped tarfile's
    own filter) and paths out of the folder are refused, and so is a file that is no
    archive at all, each in one line."""
    import io
    import tarfile

    from execbench.harvest.many import unpacked

    def pack(name: str, *members: tarfile.TarInfo) -> Path:
        path = tmp_path / name
        with tarfile.open(path, "w:gz") as packed:
            for member in members:
                packed.addfile(member, io.BytesIO(b"x" * member.size) if member.isfile()
                               else None)
        return path

    link = tarfile.TarInfo("project/escape")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc"
    hard = tarfile.TarInfo("project/hard")
    hard.type, hard.linkname = tarfile.LNKTYPE, "project/escape"
    plain = tarfile.TarInfo("project/ok.py")
    plain.size = 3
    out = tarfile.TarInfo("../out.py")
    out.size = 3
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(pack("whole.tar.gz", plain).read_bytes()[:-20])
    for archive, said in [(pack("link.tar.gz", plain, link), "is a link or a device"),
                          (pack("hard.tar.gz", plain, hard), "is a link or a device"),
                          (pack("out.tar.gz", out), "would be written outside"),
                          (truncated, "cannot unpack")]:
        with pytest.raises(HarvestError, match=said) as raised:
            unpacked(archive, tmp_path / f"into-{archive.name}")
        assert "\n" not in str(raised.value)
    assert not (tmp_path / "out.py").exists()
    assert (unpacked(pack("good.tar.gz", plain), tmp_path / "good") / "ok.py").read_text() == "xxx"


def test_a_test_that_swallows_its_time_limit_stops_the_run_with_its_records(
        tmp_path: Path) -> None:
    root = make_project(tmp_path / "project", textwrap.dedent("""

        def test_zz_stubborn():
            while True:
                try:
                    while True:
                        pass
                except BaseException:
                    pass
        """))
    result = harvest(root, tmp_path / "out.jsonl", HarvestOptions(test_timeout=0.5))
    assert not result.timed_out and result.pytest_exit is None
    assert result.stopped == "tests/test_core.py::test_zz_stubborn went on past its time limit"
    assert result.hung == ["tests/test_core.py::test_zz_stubborn"] and result.tests == (5, 6)
    assert "pkg.core.total" in read(tmp_path / "out.jsonl")


def test_forked_processes_are_not_traced_and_do_not_hold_the_records_pipe(
        tmp_path: Path) -> None:
    """A fork of the tests (a ``multiprocessing`` pool's workers) runs without the trace
    function and without the records pipe, so it can neither add records nor keep the
    pipe open past the run; the pool's calls are not recorded, the main process's are."""
    root = make_project(tmp_path / "project", textwrap.dedent("""

        def records_pipe():
            import json, os, sys
            fd = json.load(open(sys.argv[1]))["records_fd"]
            try:
                found = os.fstat(fd)
            except OSError:
                return None
            return found.st_dev, found.st_ino


        def look(pipe):
            import sys
            # the fd's number may have been taken by another file since: the same pipe?
            held = records_pipe() == tuple(pipe)
            return [sys.gettrace() is None, "held" if held else "closed", total([2])]


        def test_pool():
            import multiprocessing
            pipe = records_pipe()
            assert pipe is not None
            with multiprocessing.get_context("fork").Pool(2) as pool:
                said = pool.map(look, [pipe] * 4)
            assert total([1, 1]) == 6
            assert said == [[True, "closed", 6]] * 4
        """))
    result = harvest(root, tmp_path / "out.jsonl", HarvestOptions(test_timeout=30))
    assert result.pytest_exit == 0 and not result.hung and result.tests == (6, 6), result.log
    calls = {c["args"] for c in read(tmp_path / "out.jsonl")["pkg.core.total"]["calls"]}
    assert "[1, 1]" in calls and "[2]" not in calls


def test_the_tests_run_on_a_scratch_copy_without_secrets_or_network(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        root = tmp_path / "project"
        guards = textwrap.dedent(f"""

            def test_guards():
                import os, socket
                assert "SECRET_TOKEN" not in os.environ
                assert os.getcwd() != {str(root)!r}
                assert os.environ["HOME"].startswith(os.path.dirname(os.getcwd()))
                try:
                    socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
                except OSError:
                    return
                raise AssertionError("the test reached the harvesting machine's port")
            """)
        make_project(root, guards)
        result = harvest(root, tmp_path / "out.jsonl", HarvestOptions())
    if not result.network.startswith("on"):
        pytest.skip(f"this machine gives no network namespace: {result.network}")
    assert result.pytest_exit == 0, result.log
    assert not (root / "pkg" / "__pycache__").exists()  # the original was not written
    assert not result.refused  # an honest suite sends only records the parent can check


def test_the_same_seed_gives_the_same_file(harvested, tmp_path: Path) -> None:
    root, out, _, _ = harvested
    again = tmp_path / "again.jsonl"
    harvest(root, again, HarvestOptions(max_calls=4))
    assert again.read_bytes() == out.read_bytes()
    for record in read(again).values():
        for call in record["calls"]:
            parse_call_nodes(call["args"])
            assert call["args"] == ", ".join(map(to_literal, call["trace"]["args"]))


def test_a_harvest_file_builds_tasks_the_oracle_gets_right(harvested, tmp_path: Path) -> None:
    _, out, result, _ = harvested
    manifest = build_suite([str(out)], tmp_path / "suite", BuildOptions(tasks=["output"]))
    # every call but fails(-1) (raised) and make_box(3) is an instance: make_box returns
    # a Box, whose attributes nothing in the question shows (Box.__init__'s self does)
    assert manifest.counts.by_task["output"] == result.calls["kept"] - 2
    assert len(manifest.recorded_instances) == result.calls["kept"] - 2
    assert [skip.reason for skip in manifest.skipped if skip.task == "output"].count(
        UNSHOWN) == 1
    results = run(RunConfig(suite=str(tmp_path / "suite"), model="reference/oracle"),
                  tmp_path / "run")
    assert results["metrics"]["output"]["all"]["pass@1"] == 1.0


def test_bad_input_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HarvestError, match="is not a folder"):
        harvest(tmp_path / "missing", tmp_path / "out.jsonl")
    with pytest.raises(HarvestError, match="no interpreter"):
        harvest(tmp_path, tmp_path / "out.jsonl", HarvestOptions(python="/no/python"))
    # An interpreter without pytest (no site-packages): the child says so, nothing is written.
    bare = tmp_path / "bare-python"
    bare.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    bare.chmod(0o755)
    root = make_project(tmp_path / "project")
    with pytest.raises(HarvestError, match="did not start under .*pytest cannot be imported"):
        harvest(root, tmp_path / "out.jsonl", HarvestOptions(python=str(bare)))
    assert not (tmp_path / "out.jsonl").exists()


def _lines(*records: object) -> bytes:
    return b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n"
                    for r in records)


def _call(function: str, slot: int, ordinal: int, **extra: object) -> dict:
    return {"kind": "call", "function": function, "slot": slot, "ordinal": ordinal,
            "args": str(ordinal), "trace": {"status": "ok"}, **extra}


def test_the_parent_keeps_only_records_it_can_check() -> None:
    """What a test that writes on the records pipe may send, each refused by its reason;
    the honest records around them are kept."""
    functions = [Function("m.f", "f", "m.py", 1, 1, "def f(x): ...", None),
                 Function("m.g", "g", "m.py", 5, 5, "def g(x): ...", "one statement")]
    reader = Records(functions, max_calls=2, max_line=1000)
    jail = {"kind": "jail", "layers": {"user": "on"}, "warnings": []}
    stream = _lines(jail, _call("m.f", 0, 1), _call("m.f", 1, 2), _call("m.f", 0, 3),
                    _call("m.f", 0, 1),  # a second record for ordinal 1
                    _call("m.f", 2, 9),  # slot out of range
                    _call("m.f", 0, 2),  # ordinal 2 fills slot 1, not 0
                    _call("m.f", 1, 10**9),  # beyond the calls counted
                    _call("m.g", 0, 1),  # a filtered function
                    _call("os.system", 0, 1),  # not the project's
                    {**_call("m.f", 1, 4), "args": ["not", "text"]},
                    {"kind": "jail", "layers": {"user": "on: forged"}, "warnings": []},
                    b"not json", {"kind": "other"},
                    {"kind": "counts", "candidates": {"m.f": 3}, "tests": [1, 1],
                     "end": True},
                    _call("m.f", 1, 3),  # after the end
                    {"kind": "counts", "candidates": {"m.f": 10**9}})
    middle = len(stream) // 2  # the pipe's reads split lines anywhere
    reader.feed(stream[:middle])
    reader.feed(stream[middle:])
    # A line too long for any record, sent in pieces, and one whole: both dropped unread.
    reader.feed(b'{"kind": "counts", "end": true, "x": "' + b"x" * 800)
    reader.feed(b"x" * 800)
    reader.feed(b'"}\n' + b"y" * 1200 + b"\n" + b'{"kind": "call"')
    kept = reader.finish()
    assert reader.jail == jail
    assert {key: record["ordinal"] for key, record in kept.items()} == {("m.f", 0): 3,
                                                                         ("m.f", 1): 2}
    assert reader.accepted == 3
    assert reader.refused == {REFUSED_DUPLICATE: 1, REFUSED_SLOT: 2, REFUSED_ORDINAL: 1,
                              REFUSED_FUNCTION: 2, REFUSED_MALFORMED: 1, REFUSED_JAIL: 1,
                              REFUSED_NOT_JSON: 2, REFUSED_AFTER_END: 2, REFUSED_CUT: 1,
                              REFUSED_LONG: 2}


def test_without_the_jails_report_first_nothing_is_taken() -> None:
    reader = Records([Function("m.f", "f", "m.py", 1, 1, "def f(x): ...", None)], 2, 1000)
    reader.feed(_lines(_call("m.f", 0, 1), {"kind": "jail", "layers": {}, "warnings": []}))
    assert reader.jail is None and reader.finish() == {}
    assert reader.refused == {REFUSED_JAIL: 2}


@pytest.mark.slow
@needs_shared_data("projects")
@pytest.mark.parametrize("archive", ARCHIVES)
def test_real_projects(archive: str, tmp_path: Path, local_harvest: LocalHarvest) -> None:
    """Each project harvests (once for the test run: ``local_harvest``), and every task on
    recorded calls builds from the file, byte-identically twice, with the oracle at 100%.
    Harvesting again with the same seed gives the same file: checked on the smallest
    project only (more-itertools' suite takes minutes under the tracer)."""
    name = archive.removesuffix(".tar.gz")
    summary = json.loads(local_harvest.summary(name).read_text())
    assert not summary["timed_out"] and summary["pytest_exit"] == 0, summary
    assert summary["functions"]["kept"] > 0 and summary["calls"]["kept"] > 0
    out = local_harvest.records(name)
    if archive.startswith("inflection"):
        again = harvest_projects(projects_from([unpacked(archive, tmp_path / "src")]),
                                 tmp_path / "again", HarvestOptions())
        assert [outcome.state for outcome in again] == ["harvested"]
        assert (tmp_path / "again" / "projects" / f"{name}.jsonl").read_bytes() == \
            out.read_bytes()

    tasks = ["output", "statement", "block", "loop", "branch"]
    suites = []
    for name in ("suite", "rebuilt"):
        manifest = build_suite([str(out)], tmp_path / name, BuildOptions(tasks=tasks))
        suites.append((tmp_path / name / "instances.jsonl").read_bytes())
    assert suites[0] == suites[1] and suites[0]
    assert all(manifest.counts.by_task.get(task) for task in tasks), manifest.counts
    if not archive.startswith("inflection"):  # inflection has no class
        objects = Counter(json.loads(line)["task"] for line in suites[0].splitlines()
                          if json.loads(line).get("objects"))
        assert objects["output"] and objects["statement"], objects
    results = run(RunConfig(suite=str(tmp_path / "suite"), model="reference/oracle"),
                  tmp_path / "run")
    assert {task: results["metrics"][task]["all"]["pass@1"] for task in tasks} == \
        dict.fromkeys(tasks, 1.0)


def test_code_without_a_file_is_never_taken_for_the_projects(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """``<frozen abc>`` (an ``isinstance`` in pytest's own reporting) once passed for a
    project file: ``realpath`` put the name under the working folder, the project's root,
    so the test limit was raised into pytest between a test's phases."""
    from execbench.harvest.child import _Harvest

    harvest = object.__new__(_Harvest)
    harvest.root = os.path.realpath(tmp_path) + os.sep
    harvest.runner_dirs = (os.path.dirname(os.path.realpath(pytest.__file__)),)
    monkeypatch.chdir(tmp_path)
    frames: list[Any] = []
    code = compile("frames.append(sys._getframe())", "<frozen abc>", "exec")
    exec(code, {"frames": frames, "sys": sys})  # noqa: S102 - our own fixed text
    assert not harvest._in_the_test(frames[0])
