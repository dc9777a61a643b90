"""The Java harvest: a small JUnit 4 project the test writes (loops, branches, objects,
arrays, references that alias and that do not), run by its own test script, recorded by
the JDI helper (``native/jdi``).

The recorder's raw lines are checked first on their own (the recorder run outside the
jail, the channel a pipe as the driver gives it), so a failure says whether the helper or
the plumbing broke; then the whole harvest in the jail: every CodeSense task builds from
it and the oracle is right on all of it, the aliasing truth is what the tests made, and
two harvests give the same bytes. Skipped, saying so, where javac or JUnit 4's jar is
missing (Debian: ``apt-get install default-jdk-headless junit4``).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from execbench.harvest import jail
from execbench.harvest.native import java
from execbench.harvest.options import HarvestOptions
from execbench.harvest.project import harvest
from tests.helpers.cli import execbench
from tests.helpers.harvests import CODESENSE_TASKS, oracle_on_codesense_tasks

JUNIT = Path("/usr/share/java/junit4.jar")
HAMCREST = Path("/usr/share/java/hamcrest-core.jar")

pytestmark = pytest.mark.skipif(
    shutil.which("javac") is None or not JUNIT.is_file() or not HAMCREST.is_file(),
    reason="needs a JDK and JUnit 4 (Debian: apt-get install default-jdk-headless junit4)")

GRID = """\
package geo;

public class Grid {
    public static class Cell {
        int row;
        int col;
        Cell next;

        public Cell(int row, int col) {
            this.row = row;
            this.col = col;
        }
    }

    public static int total(int[] values) {
        int sum = 0;
        for (int i = 0; i < values.length; i++) {
            sum += values[i];
        }
        return sum;
    }

    public static String grade(int score) {
        String mark;
        if (score >= 90) {
            mark = "A";
        } else if (score >= 50) {
            mark = "B";
        } else {
            mark = "C";
        }
        return mark;
    }

    public static boolean sameRow(Cell a, Cell b) {
        boolean same = a.row == b.row;
        Cell moved = a;
        moved.col = moved.col + 1;
        return same;
    }

    public static int[] fill(int[] target, int value) {
        int[] out = target;
        for (int i = 0; i < out.length; i++) {
            out[i] = value;
        }
        return out;
    }

    public static int chain(Cell cell) {
        int n = 0;
        Cell at = cell;
        while (at != null) {
            n++;
            at = at.next;
        }
        return n;
    }

    public static double ratio(int a, int b) {
        double r = (double) a / b;
        return r;
    }

    public static int checked(int x) {
        if (x < 0) {
            throw new IllegalArgumentException("negative " + x);
        }
        return x * 2;
    }
}
"""

GRID_TEST = """\
package geo;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;

import org.junit.Test;

public class GridTest {
    @Test
    public void totals() {
        assertEquals(6, Grid.total(new int[] {1, 2, 3}));
        assertEquals(0, Grid.total(new int[] {}));
    }

    @Test
    public void grades() {
        assertEquals("A", Grid.grade(95));
        assertEquals("B", Grid.grade(60));
        assertEquals("C", Grid.grade(10));
    }

    @Test
    public void rows() {
        Grid.Cell x = new Grid.Cell(1, 1);
        Grid.Cell y = new Grid.Cell(1, 5);
        assertTrue(Grid.sameRow(x, x));
        assertTrue(Grid.sameRow(x, y));
        assertEquals(3, x.col);
    }

    @Test
    public void fills() {
        int[] a = new int[3];
        assertSame(a, Grid.fill(a, 7));
        assertArrayEquals(new int[] {7, 7, 7}, a);
    }

    @Test
    public void chains() {
        Grid.Cell first = new Grid.Cell(0, 0);
        first.next = new Grid.Cell(0, 1);
        assertEquals(2, Grid.chain(first));
    }

    @Test
    public void ratios() {
        assertEquals(0.1, Grid.ratio(1, 10), 0.0);
        assertEquals(1e-05, Grid.ratio(1, 100000), 0.0);
        assertEquals(2.0, Grid.ratio(4, 2), 0.0);
        assertTrue(Grid.ratio(1, 0) > 0);
    }

    @Test
    public void checks() {
        assertEquals(4, Grid.checked(2));
        try {
            Grid.checked(-3);
        } catch (IllegalArgumentException expected) {
            assertFalse(expected.getMessage().isEmpty());
        }
    }
}
"""

BUILD_SCRIPT = f"""\
set -e
mkdir -p build
javac -d build -cp {JUNIT}:{HAMCREST} src/main/java/geo/*.java src/test/java/geo/*.java
"""
"""The build: ``-g`` comes from the harvest's ``JDK_JAVAC_OPTIONS``."""
TEST_SCRIPT = f"""\
java -cp build:{JUNIT}:{HAMCREST} org.junit.runner.JUnitCore geo.GridTest
"""

FILES = ["src/main/java/geo/Grid.java", "src/test/java/geo/GridTest.java"]


def write_project(root: Path) -> Path:
    """The project: its sources, ``build.sh`` and ``test.sh``, its own commands."""
    for relative, text in zip(FILES, (GRID, GRID_TEST), strict=True):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    (root / "build.sh").write_text(BUILD_SCRIPT)
    (root / "test.sh").write_text(TEST_SCRIPT)
    return root


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache folder of the module's own, so the helper is compiled here once."""
    folder = tmp_path_factory.mktemp("cache")
    before = os.environ.get("EXECBENCH_CACHE")
    os.environ["EXECBENCH_CACHE"] = str(folder)
    yield folder
    if before is None:
        del os.environ["EXECBENCH_CACHE"]
    else:
        os.environ["EXECBENCH_CACHE"] = before


def record(project: Path, scratch: Path, **bounds: int) -> list[dict[str, Any]]:
    """Build, then run the test script under the recorder, as the driver does but outside
    the jail: the config names the project's files and the pipe's write end."""
    subprocess.run(["sh", "build.sh"], cwd=project, check=True,
                   env={"PATH": os.environ["PATH"], **java.DEBUG_INFO})
    read, write = os.pipe()
    config = scratch / "recorder.json"
    config.write_text(json.dumps({
        "records_fd": write, "root": str(project), "files": FILES,
        "max_events": bounds.get("max_events", 1000), "max_calls_seen": 50,
        "max_depth": 3, "max_value_nodes": 200}))
    recorder = java.LANGUAGE.recorder(scratch, "test.sh", config)
    env = {"PATH": os.environ["PATH"], **recorder.env}
    process = subprocess.Popen(recorder.argv, cwd=project, env=env, pass_fds=(write,),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    os.close(write)
    with os.fdopen(read, "rb") as channel:
        raw = channel.read()
    output = process.communicate(timeout=600)[0].decode()
    assert process.returncode == 0, output
    return [json.loads(line) for line in raw.decode().splitlines()]


@pytest.fixture(scope="module")
def recorded(cache: Path, tmp_path_factory: pytest.TempPathFactory
             ) -> list[dict[str, Any]]:
    root = tmp_path_factory.mktemp("grid")
    return record(write_project(root / "project"), root)


def calls_of(lines: list[dict[str, Any]], name: str) -> list[dict[str, list[dict[str, Any]]]]:
    """Each call of the method: its call record, line records and return record."""
    numbers = [line["call"] for line in lines
               if line["kind"] == "call" and line["name"] == f"Grid.{name}"]
    return [{"call": [line for line in lines if line["kind"] == "call" and line["call"] == n],
             "lines": [line for line in lines if line["kind"] == "line" and line["call"] == n],
             "return": [line for line in lines if line["kind"] == "return"
                        and line["call"] == n]} for n in numbers]


def local(record: dict[str, Any], name: str) -> list[Any]:
    found = [item for item in record.get("locals", record.get("args", [])) if item[0] == name]
    assert len(found) == 1, (name, record)
    return found[0]


def test_only_the_projects_methods_are_recorded(recorded: list[dict[str, Any]]) -> None:
    names = {line["name"].rpartition(".")[2] for line in recorded if line["kind"] == "call"}
    assert names == {"total", "grade", "sameRow", "fill", "chain", "ratio", "checked"}
    assert recorded[-1] == {"kind": "end", "tests": [7, 7], "exit": 0}
    header = next(line for line in recorded
                  if line["kind"] == "call" and line["name"] == "Grid.total")
    lines = GRID.splitlines()
    assert lines[header["first"] - 1].strip().startswith("public static int total(")
    assert lines[header["last"] - 1] == "    }"
    assert header["function"] == "src/main/java/geo/Grid.java:Grid.total"


def test_a_loop_gives_a_line_event_per_iteration(recorded: list[dict[str, Any]]) -> None:
    first = calls_of(recorded, "total")[0]
    loop = GRID.splitlines().index("        for (int i = 0; i < values.length; i++) {") + 1
    assert [line["line"] for line in first["lines"]] == \
        [loop - 1, loop, loop + 1, loop, loop + 1, loop, loop + 1, loop, loop + 3]
    assert [local(line, "sum")[1] for line in first["lines"][2:]] == \
        [["int", n] for n in (0, 1, 1, 3, 3, 6, 6)]
    assert first["return"][0]["value"] == ["int", 6]


def test_branches_run_only_their_taken_block(recorded: list[dict[str, Any]]) -> None:
    lines = GRID.splitlines()
    taken = {call["return"][0]["value"][1]: {lines[line["line"] - 1].strip()
                                             for line in call["lines"]}
             for call in calls_of(recorded, "grade")}
    assert 'mark = "A";' in taken["A"] and 'mark = "B";' not in taken["A"]
    assert 'mark = "C";' in taken["C"] and 'mark = "A";' not in taken["C"]


def test_references_alias_exactly_when_the_test_passes_one_object(
        recorded: list[dict[str, Any]]) -> None:
    same, different = calls_of(recorded, "sameRow")
    a, b = same["call"][0]["args"]
    assert a[2] == b[2] == "a1"
    a, b = different["call"][0]["args"]
    assert (a[2], b[2]) == ("a1", "a2")
    moved = local(different["return"][0], "moved")
    assert moved[2] == "a1"  # moved = a
    assert moved[1] == ["dict", [[["str", "row"], ["int", 1]], [["str", "col"], ["int", 3]],
                                 [["str", "next"], ["none"]]]]
    filled = calls_of(recorded, "fill")[0]["return"][0]
    assert local(filled, "target")[2] == local(filled, "out")[2] == "a1"
    assert filled["value"] == ["list", [["int", 7]] * 3]


def test_objects_are_read_to_a_bounded_depth(recorded: list[dict[str, Any]]) -> None:
    cell = calls_of(recorded, "chain")[0]["call"][0]["args"][0]
    inner = ["dict", [[["str", "row"], ["int", 0]], [["str", "col"], ["int", 1]],
                      [["str", "next"], ["none"]]]]
    assert cell[1] == ["dict", [[["str", "row"], ["int", 0]], [["str", "col"], ["int", 0]],
                                [["str", "next"], inner]]]


def test_numbers_read_as_the_published_native_values(recorded: list[dict[str, Any]]
                                                     ) -> None:
    values = [call["return"][0]["value"] for call in calls_of(recorded, "ratio")]
    assert values == [["float", repr(0.1)], ["float", repr(1e-05)], ["int", 2],
                      ["float", "inf"]]
    assert all(value[0] != "float" or value[1] == "inf" or
               repr(float(value[1])) == value[1] for value in values)
    assert not math.isnan(float(values[0][1]))


def test_an_exception_ends_the_call_it_unwinds(recorded: list[dict[str, Any]]) -> None:
    fine, thrown = calls_of(recorded, "checked")
    assert fine["return"][0]["value"] == ["int", 4]
    end = thrown["return"][0]
    assert end["value"] is None
    assert end["exception"] == "java.lang.IllegalArgumentException: negative -3"
    assert local(end, "x")[1] == ["int", -3]


def test_the_recording_is_the_same_twice(cache: Path, recorded: list[dict[str, Any]],
                                         tmp_path: Path) -> None:
    again = record(write_project(tmp_path / "project"), tmp_path)
    assert again == recorded


def test_a_long_call_is_given_up_one_line_past_the_bound(cache: Path, tmp_path: Path
                                                          ) -> None:
    lines = record(write_project(tmp_path / "project"), tmp_path, max_events=3)
    long, short = calls_of(lines, "total")
    assert len(long["lines"]) == 4 and long["return"] == []  # the driver drops it
    assert len(short["lines"]) == 3  # the method's breakpoints came back after it
    assert short["return"][0]["value"] == ["int", 0]


def test_the_helper_is_compiled_once_per_source_and_jdk(cache: Path) -> None:
    jdk = java.find_jdk()
    folder = java.helper_classes(jdk)
    stamp = (folder / "Recorder.class").stat().st_mtime_ns
    assert java.helper_classes(jdk) == folder
    assert (folder / "Recorder.class").stat().st_mtime_ns == stamp
    assert folder.parent == cache / "jdi"


# --------------------------------------------------------------------------- the harvest

OPTIONS = HarvestOptions(language="java", build="sh build.sh", test="sh test.sh",
                         max_calls=10, timeout=600)


@pytest.fixture(scope="module")
def harvested(cache: Path, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[dict[str, Any]]:
    off = {name: state for name, state in jail.layers().items() if not state.startswith("on")}
    if off:
        pytest.skip(f"this machine lacks jail layers the harvest needs: {off}")
    root = tmp_path_factory.mktemp("java-harvest")
    project = write_project(root / "project")
    out = root / "harvest.jsonl"
    result = harvest(project, out, OPTIONS, log=root / "run.log")
    records = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    yield {"root": root, "project": project, "out": out, "result": result,
           "records": records}


def test_the_harvest_keeps_the_projects_methods_in_the_jail(harvested: dict) -> None:
    result = harvested["result"]
    assert result.tests == (7, 7) and result.pytest_exit == 0, harvested["root"] / "run.log"
    assert sum(result.refused.values()) == 0
    assert result.layers["network"].endswith("its own loopback up (a debugger's socket)")
    assert result.layers["user"].startswith("on")
    prefix = "src/main/java/geo/Grid.java:Grid."
    assert sorted(harvested["records"]) == [prefix + name for name in (
        "chain", "checked", "fill", "grade", "ratio", "sameRow", "total")]
    record = harvested["records"][prefix + "total"]
    assert record["language"] == "java" and record["entry_point"] == "total"
    assert record["code"].startswith("    public static int total(int[] values) {\n")
    assert [call["args"] for call in record["calls"]] == ["values = {1, 2, 3}", "values = {}"]
    trace = record["calls"][0]["trace"]
    assert trace["value"] == ["int", 6] and trace["text"] == "6"


def test_every_codesense_task_builds_and_the_oracle_is_right(harvested: dict,
                                                             tmp_path: Path) -> None:
    scores = oracle_on_codesense_tasks(harvested["out"], tmp_path)
    assert scores == dict.fromkeys(CODESENSE_TASKS, 1.0)


def _alias(record: dict[str, Any]) -> set[tuple[str, str, str, bool]]:
    return {(call["args"], *sorted((fact["first"]["pointer"], fact["second"]["pointer"])),
             fact["aliased"])
            for call in record["calls"] for fact in call["trace"]["facts"]
            if fact["task"] == "alias"}


def test_the_aliasing_truth_is_what_the_tests_made(harvested: dict) -> None:
    records = harvested["records"]
    same, different = (call["args"] for call in
                       records["src/main/java/geo/Grid.java:Grid.sameRow"]["calls"])
    rows = _alias(records["src/main/java/geo/Grid.java:Grid.sameRow"])
    assert (same, "a", "b", True) in rows  # sameRow(x, x)
    assert (different, "a", "b", False) in rows  # sameRow(x, y)
    assert (different, "a", "moved", True) in rows and \
        (different, "b", "moved", False) in rows  # moved = a
    fill = _alias(records["src/main/java/geo/Grid.java:Grid.fill"])
    assert {fact[1:] for fact in fill} == {("out", "target", True)}


def test_a_second_harvest_gives_the_same_bytes(harvested: dict) -> None:
    again = harvested["root"] / "again.jsonl"
    harvest(harvested["project"], again, OPTIONS)
    assert again.read_bytes() == harvested["out"].read_bytes()


def test_the_cli_harvests_a_java_project(harvested: dict, tmp_path: Path) -> None:
    out = tmp_path / "cli.jsonl"
    done = execbench("harvest", harvested["project"], "--out", out, "--language", "java",
                     "--build", "sh build.sh", "--test", "sh test.sh", "--max-calls", 10)
    assert done.exit_code == 0, done.stderr
    assert out.read_bytes() == harvested["out"].read_bytes()
    assert "functions: 7 kept" in done.stdout


# --------------------------------------------------------------------------- hostile

EVIL = """\
package evil;

public class Values {
    public static class Node {
        Node next;
    }

    public static int take(int[] huge, String text, Node chain, Node loop) {
        int n = huge.length + text.length();
        return n;
    }

    public static String report(String route, String outcome) {
        String said = route + ": " + outcome;
        return said;
    }
}
"""

EVIL_TEST = """\
package evil;

import java.io.FileOutputStream;
import java.io.OutputStream;
import java.net.Socket;
import org.junit.Test;

public class ValuesTest {
    interface Attempt {
        String run() throws Exception;
    }

    static void attempt(String route, Attempt action) {
        String outcome;
        try {
            outcome = "done " + action.run();
        } catch (Exception e) {
            outcome = "refused " + e.getClass().getSimpleName();
        }
        Values.report(route, outcome);
    }

    @Test
    public void bounded() {
        Values.Node chain = null;
        for (int i = 0; i < 100; i++) {
            Values.Node node = new Values.Node();
            node.next = chain;
            chain = node;
        }
        Values.Node loop = new Values.Node();
        loop.next = loop;
        Values.take(new int[1000000], "x".repeat(200000), chain, loop);
    }

    @Test
    public void escapes() {
        attempt("host", () -> {
            new Socket("127.0.0.1", HOST_PORT).close();
            return "connected";
        });
        attempt("outside", () -> {
            new FileOutputStream(OUTSIDE).close();
            return "written";
        });
        attempt("recorder", () -> {
            String options = System.getenv("JAVA_TOOL_OPTIONS");
            int port = Integer.parseInt(
                options.replaceAll(".*127\\\\.0\\\\.0\\\\.1:(\\\\d+).*", "$1"));
            try (Socket socket = new Socket("127.0.0.1", port)) {
                OutputStream out = socket.getOutputStream();
                out.write("JDWP-Handshake\\u0000\\u0000\\u0000\\u000bforged".getBytes());
                out.flush();
            }
            return "sent";
        });
    }
}
"""


def test_a_hostile_java_project_gets_bounded_values_and_no_way_out(cache: Path,
                                                                   tmp_path: Path) -> None:
    """Its tests record huge and cyclic values, reach for the host's loopback (a listener
    here), write outside the copy and talk to the recorder's own socket: the values come
    bounded, the listener sees no one, nothing is written, the harvest ends whole."""
    off = {name: state for name, state in jail.layers().items() if not state.startswith("on")}
    if off:
        pytest.skip(f"this machine lacks jail layers the harvest needs: {off}")
    outside = tmp_path / "outside-marker"
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0)
        project = tmp_path / "project"
        test = EVIL_TEST.replace("HOST_PORT", str(listener.getsockname()[1])) \
            .replace("OUTSIDE", json.dumps(str(outside)))
        for relative, text in (("src/main/java/evil/Values.java", EVIL),
                               ("src/test/java/evil/ValuesTest.java", test)):
            (project / relative).parent.mkdir(parents=True, exist_ok=True)
            (project / relative).write_text(text)
        (project / "build.sh").write_text(BUILD_SCRIPT.replace("geo", "evil"))
        (project / "test.sh").write_text(TEST_SCRIPT.replace("geo.GridTest",
                                                             "evil.ValuesTest"))
        out = tmp_path / "evil.jsonl"
        result = harvest(project, out, OPTIONS, log=tmp_path / "run.log")
        with pytest.raises(BlockingIOError):
            listener.accept()
    assert not outside.exists()
    assert result.tests == (2, 2), tmp_path / "run.log"
    records = {r["entry_point"]: r for r in map(json.loads, out.read_text().splitlines())}
    said = {call["trace"]["value"][1].split(": ")[0]: call["trace"]["value"][1]
            for call in records["report"]["calls"]}
    assert said["host"].startswith("host: refused")
    assert said["outside"].startswith("outside: refused")
    assert said["recorder"] == "recorder: done sent"
    [take] = records["take"]["calls"]
    assert len(json.dumps(take)) < 20_000
    assert take["trace"]["value"] == ["int", 1_200_000]
