"""Harvesting methods and object values: ``self`` and other objects of the project's classes
are kept as their attributes, asked about in the output and CodeSense tasks, and scored
field by field; opaque values and objects held twice are dropped, each counted by reason."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from execbench.harvest.options import HarvestOptions
from execbench.harvest.project import NO_CALL_KEPT, harvest
from execbench.runner import RunConfig, run
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task
from execbench.tasks.asking import ask
from execbench.tasks.common.objects import OBJECTS_NOTE
from execbench.tasks.protocol import Protocol

SHAPES = '''\
import collections

Pair = collections.namedtuple("Pair", "left right")


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def moved(self, dx):
        total = self.x + dx
        return Point(total, self.y)


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a):
        self.a = a
        self.b = a * 2

    def total(self):
        s = self.a
        for _ in range(2):
            s += self.b
        return s


class Node:
    def __init__(self, value):
        self.value = value
        self.next = None

    def link(self, other):
        self.next = other
        other.next = self
        return self.value + other.value


class Box:
    def __init__(self, inner):
        self.inner = inner

    def area(self, pair):
        p = self.inner
        if p.x > pair.left:
            return p.x * pair.right
        return p.y


def read_first(handle):
    line = handle.readline()
    return line.strip()


def apply(fn, x):
    y = fn(x)
    return y + 1
'''

TESTS = '''\
from pkg.shapes import Box, Node, Pair, Point, Slotted, apply, read_first


def test_points():
    assert Point(1, 2).moved(3).x == 4
    assert Slotted(2).total() == 10
    assert Box(Point(5, 6)).area(Pair(1, 2)) == 10


def test_nodes():
    first, second = Node(1), Node(2)
    assert first.link(second) == 3
    assert first.link(second) == 3  # now a cycle: first.next.next is first


def test_opaque(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("hello\\n")
    with open(path) as handle:
        assert read_first(handle) == "hello"
    assert apply(abs, -2) == 3
'''

TASKS = ["output", "statement", "block", "loop", "branch"]


def make_project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "shapes.py").write_text(SHAPES)
    (root / "tests").mkdir()
    (root / "tests" / "test_shapes.py").write_text(TESTS)
    return root


@pytest.fixture(scope="module")
def harvested(tmp_path_factory: pytest.TempPathFactory):
    root = make_project(tmp_path_factory.mktemp("shapes") / "project")
    out = root.parent / "harvest.jsonl"
    result = harvest(root, out, HarvestOptions())
    assert result.pytest_exit == 0, result.log
    records = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    return root, out, result, records


def _calls(records: dict, function: str) -> dict[str, dict]:
    return {call["args"]: call["trace"] for call in records[f"pkg.shapes.{function}"]["calls"]}


def test_methods_are_kept_with_self_shown_by_its_attributes(harvested) -> None:
    _, _, result, records = harvested
    moved = _calls(records, "Point.moved")["Point(x=1, y=2), 3"]
    assert moved["value"] == ["instance", "Point", [["x", ["int", 4]], ["y", ["int", 2]]]]
    assert moved["value_repr"] == "Point(x=4, y=2)"
    # an object-valued local is recorded by its attributes too
    assert moved["states"][0]["locals"]["self"][0] == "instance"
    # __slots__, and an object nested in another with a named tuple beside it
    assert _calls(records, "Slotted.total")["Slotted(a=2, b=4)"]["value"] == ["int", 10]
    area = _calls(records, "Box.area")
    assert list(area) == ["Box(inner=Point(x=5, y=6)), Pair(left=1, right=2)"]
    # link's first call is kept; its second, when the nodes point at each other, is not
    assert list(_calls(records, "Node.link")) == [
        "Node(value=1, next=None), Node(value=2, next=None)"]
    assert result.calls["an argument holds an object twice (a cycle or a shared reference)"] \
        == 1
    # opaque values stay dropped, by reason
    assert "pkg.shapes.read_first" not in records and "pkg.shapes.apply" not in records
    assert result.functions[NO_CALL_KEPT] == 2
    assert result.calls["an argument holds a file, stream or socket"] == 1
    assert result.calls["an argument holds a function, method, class or module"] == 1
    assert sum(result.calls.values()) == result.seen


def test_literals_only_drops_every_method_as_before(harvested, tmp_path: Path) -> None:
    root = Path(shutil.copytree(harvested[0], tmp_path / "project"))
    result = harvested[2]
    (root / "pkg" / "lists.py").write_text(
        "def first_x(points):\n    p = points[0]\n    return p.x\n")
    (root / "tests" / "test_lists.py").write_text(
        "from pkg.lists import first_x\nfrom pkg.shapes import Point\n\n\n"
        "def test_first():\n    assert first_x([Point(1, 2)]) == 1\n")
    out = tmp_path / "literal.jsonl"
    literal = harvest(root, out, HarvestOptions(objects=False))
    assert out.read_text() == ""  # every function here takes an object or a file
    assert literal.functions["kept"] == 0 < result.functions["kept"]
    assert literal.calls["an argument holds an object"] == literal.seen - literal.calls.get(
        "its function was filtered out", 0)


def test_object_instances_are_asked_and_scored_field_by_field(harvested,
                                                              tmp_path: Path) -> None:
    _, out, _, _ = harvested
    manifest = build_suite([str(out)], tmp_path / "suite", BuildOptions(tasks=TASKS))
    assert all(manifest.counts.by_task.get(task) for task in TASKS), manifest.counts
    _, instances, _ = load_suite(tmp_path / "suite")
    by_id = {instance.id: instance for instance in instances}
    output = get_task("output")
    [moved] = [i for i in instances if i.task == "output" and "moved" in i.call]
    assert moved.data["objects"] is True
    prompt = ask(output, moved, Protocol(shots=0))[0]["content"]
    assert OBJECTS_NOTE in prompt and "moved(Point(x=1, y=2), 3)" in prompt
    for answer, verdict in [("Point(y=2, x=4)", "correct"), ("Point(x=4, y=2.0)", "incorrect"),
                            ("Point(x=4)", "incorrect"), ("Pt(x=4, y=2)", "incorrect"),
                            ("Point(4, 2)", "unparsable")]:
        response = f"[ANSWER]\nassert {moved.call} == {answer}\n[/ANSWER]"
        assert output.judging.score(moved, response, None).verdict == verdict, answer
    # a run without objects keeps its prompt as it was
    plain = [i for i in instances if i.task == "output" and not i.data.get("objects")]
    assert not plain or OBJECTS_NOTE not in ask(output, plain[0], Protocol(shots=0))[0]["content"]
    results = run(RunConfig(suite=str(tmp_path / "suite"), model="reference/oracle"),
                  tmp_path / "run")
    assert {task: results["metrics"][task]["all"]["pass@1"] for task in TASKS} == \
        dict.fromkeys(TASKS, 1.0)
    asked_objects = [i for i in by_id.values() if i.data.get("objects")]
    assert {i.task for i in asked_objects} >= {"output", "statement", "loop"}


def test_a_malformed_recorded_value_is_the_records_error_not_the_builds(harvested) -> None:
    """The tests of a harvested project can write records too: a state whose value is not
    typed JSON is refused when the file is read, so no task meets it mid-build."""
    from execbench.sources.generic import build
    from execbench.sources.jsonl import Record, RecordError

    _, _, _, records = harvested
    data = json.loads(json.dumps(records["pkg.shapes.Point.moved"]))
    assert build(Record(data, "h/moved", "h")).calls  # as recorded, it reads
    data["calls"][0]["trace"]["states"][0]["locals"]["self"] = ["instance", "P", 5]
    with pytest.raises(RecordError, match="a value or a state is not typed JSON"):
        build(Record(data, "h/moved", "h"))
    data["calls"][0]["trace"]["states"][0] = {"line": 1}
    with pytest.raises(RecordError, match="a value or a state is not typed JSON"):
        build(Record(data, "h/moved", "h"))
