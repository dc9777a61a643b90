"""Tasks, formats and model providers from other packages (``execbench.plugins``).

The registry's rules are shown in this process, on distributions written into a folder on
the path; then two real packages are installed with pip into a virtual environment of
their own, and that environment's ``execbench`` builds, runs and reports with a plugin's
task, format and model, and keeps its own names and its work when the other package is
hostile."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from execbench.plugins import PluginError
from execbench.registry import Registry

GROUP = "execbench.tests.things"


def distribution(root: Path, name: str, entry_points: dict[str, str],
                 modules: dict[str, str]) -> None:
    """An installed distribution as ``importlib.metadata`` finds one on the path: its
    metadata folder with entry points in ``GROUP``, beside its modules."""
    info = root / f"{name.replace('-', '_')}-1.0.dist-info"  # a folder named as pip names it
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[{GROUP}]\n" + "".join(f"{key} = {value}\n" for key, value in entry_points.items()))
    for module, code in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(code))


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in ("things_a", "things_b", "things_broken"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    return tmp_path


def test_a_plugin_is_imported_only_when_its_name_is_looked_up(installed: Path) -> None:
    distribution(installed, "things-a", {"seven": "things_a:SEVEN"}, {"things_a": "SEVEN = 7\n"})
    things: Registry[int] = Registry("thing", plugins=GROUP)
    things.register("one", 1)
    assert things.names() == ["one", "seven"] and "seven" in things
    assert "things_a" not in sys.modules
    assert things.get("seven") == 7 and things.origin("seven") == "things-a 1.0"
    assert things.origin("one") is None


def test_names_are_the_built_ins_first_then_the_first_plugin_s(
        installed: Path, caplog: pytest.LogCaptureFixture) -> None:
    distribution(installed, "things-a", {"one": "things_a:ONE", "two": "things_a:TWO"},
                 {"things_a": "raise RuntimeError('things-a fails')\n"})
    distribution(installed, "things-b", {"two": "things_b:TWO"}, {"things_b": "TWO = 22\n"})
    things: Registry[int] = Registry("thing", plugins=GROUP)
    things.register("one", 1)
    with caplog.at_level(logging.WARNING, logger="execbench.plugins"):
        assert things.names() == ["one", "two"]
    assert [record.getMessage() for record in caplog.records] == [
        "warning: thing 'one' of the entry point 'one = things_a:ONE' (execbench.tests.things) "
        "of things-a 1.0 is not used: execbench has a built-in thing of that name",
        "warning: thing 'two' of the entry point 'two = things_b:TWO' (execbench.tests.things) "
        "of things-b 1.0 is not used: the entry point 'two = things_a:TWO' "
        "(execbench.tests.things) of things-a 1.0 declares it first"]
    assert things.get("one") == 1
    with pytest.raises(PluginError, match="things-a fails"):
        things.get("two")  # things-a's, which fails: things-b's is not a fallback
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="execbench.plugins"):
        things.register("two", 2)  # a built-in entry registered late still wins
    assert things.get("two") == 2 and things.origin("two") is None
    assert "execbench has a built-in thing of that name" in caplog.records[0].getMessage()


def test_a_plugin_that_fails_is_named_where_used_and_passed_over_elsewhere(
        installed: Path) -> None:
    distribution(installed, "things-broken", {"bad": "things_broken:BAD"}, {"things_broken": """\
        import pathlib
        pathlib.Path(__file__).with_name("imports").open("a").write("x")
        raise ImportError("no module named 'missing'\\nsecond line")
    """})
    things: Registry[object] = Registry("thing", plugins=GROUP)
    things.register("one", 1)
    assert things.entries() == {"one": 1}
    for _ in range(2):
        with pytest.raises(PluginError) as failed:
            things.get("bad")
        assert str(failed.value) == (
            "thing 'bad' cannot be loaded from the entry point 'bad = things_broken:BAD' "
            "(execbench.tests.things) of things-broken 1.0: ImportError: no module named "
            "'missing'")
    assert (installed / "imports").read_text() == "x", "a failed import is not tried again"


def test_a_plugin_must_answer_to_the_name_it_is_declared_under(installed: Path) -> None:
    distribution(installed, "things-a", {"short": "things_a:TASK"}, {"things_a": """\
        class Task:
            name = "long-name"
        TASK = Task()
    """})
    things: Registry[object] = Registry("thing", plugins=GROUP)
    with pytest.raises(PluginError, match="calls itself 'long-name'; the two names must agree"):
        things.get("short")


# The two packages installed into a virtual environment: one adds a task, a format and a
# model provider; the other is hostile, taking the name of a built-in task (a module that
# leaves a mark if it is ever imported) and declaring a task, a format and a provider
# whose module fails.
TINY = {
    "pyproject.toml": """\
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "execbench-tiny"
        version = "0.1"

        [project.entry-points."execbench.tasks"]
        return-type = "execbench_tiny.task:RETURN_TYPE"

        [project.entry-points."execbench.formats"]
        oneliners = "execbench_tiny.format:ONELINERS"

        [project.entry-points."execbench.models"]
        echo = "execbench_tiny.model:ECHO"
    """,
    "execbench_tiny/__init__.py": "",
    "execbench_tiny/task.py": '''\
        """The type of the value a call returns, answered by its name."""

        from dataclasses import dataclass

        from execbench.tasks.base import CORRECT, INCORRECT, UNPARSABLE, Score
        from execbench.tasks.roles import Roles, Task
        from execbench.values import decode


        @dataclass(frozen=True)
        class TypeName:
            truth: str

            def to_record(self):
                return {"truth": self.truth}


        class ReturnType(Roles):
            name = "return-type"
            description = "the type of the value a call returns"
            family = "types"
            needs_sandbox = False

            def unusable(self, trace):
                return None if trace.status == "ok" else "the call returned nothing"

            def build(self, program, call_index, trace, ctx):
                return [TypeName(type(decode(trace.value)).__name__)]

            def prompt(self, instance, protocol):
                return [{"role": "user", "content": f"{instance.code}\\nWhat type of value "
                         f"does {instance.call} return? Its name alone, on the last line."}]

            def reference_response(self, instance):
                return instance.data["truth"]

            def score(self, instance, response, sandbox):
                lines = (response or "").strip().splitlines()
                if not lines:
                    return Score(UNPARSABLE, detail="no answer")
                answer = lines[-1].strip().strip("`.")
                right = answer == instance.data["truth"]
                return Score(CORRECT if right else INCORRECT, answer=answer)


        RETURN_TYPE = Task.of(ReturnType())
    ''',
    "execbench_tiny/format.py": '''\
        """JSONL records of one-line functions of x: key, expr, inputs."""

        from execbench.program import Call
        from execbench.sources.formats import Format
        from execbench.sources.generic import build_program


        def build(record, reading):
            code = f"def f(x):\\n    return {record.get('expr')}\\n"
            calls = [Call(args=text) for text in record.get("inputs", list)]
            return build_program(record, code, "f", calls, {})


        ONELINERS = Format("one-line functions of x: key, expr, inputs", id_key="key",
                           build=build, detect=(frozenset({"key", "expr", "inputs"}),))
    ''',
    "execbench_tiny/model.py": '''\
        """echo/TEXT answers every prompt with TEXT."""

        from execbench.models.base import Generation, ModelBase
        from execbench.models.provider import ModelKind, Provider


        class Echo(ModelBase):
            def __init__(self, name, text):
                self.name = name
                self.text = text

            async def generate(self, request, config):
                return Generation(text=self.text)


        ECHO = Provider(lambda name, rest, base_url, args: Echo(name, rest),
                        (ModelKind("echo/<text>", "answers every prompt with <text>"),))
    ''',
}
HOSTILE = {
    "pyproject.toml": """\
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "execbench-hostile"
        version = "6.6"

        [project.entry-points."execbench.tasks"]
        output = "execbench_hostile.shadow:OUTPUT"
        broken = "execbench_hostile.broken:TASK"

        [project.entry-points."execbench.formats"]
        broken = "execbench_hostile.broken:FORMAT"

        [project.entry-points."execbench.models"]
        broken = "execbench_hostile.broken:PROVIDER"
    """,
    "execbench_hostile/__init__.py": "",
    "execbench_hostile/shadow.py": """\
        import os
        open(os.environ["SHADOW_MARK"], "w").write("imported")
        OUTPUT = None
    """,
    "execbench_hostile/broken.py": "raise RuntimeError('this plugin is broken')\n",
}


def write_package(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(text))
    return folder


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment of its own, which sees this checkout's execbench and its
    dependencies (no network here: nothing is fetched) and has the two packages installed
    by pip, with an ``execbench`` command made as pip makes one."""
    root = tmp_path_factory.mktemp("plugins")
    env = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", env], check=True)
    python = env / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], check=True, capture_output=True, text=True)
    (Path(site.stdout.strip()) / "execbench_checkout.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet",
                    "--no-index", "--no-deps", "--no-build-isolation",
                    write_package(root / "tiny", TINY), write_package(root / "hostile", HOSTILE)],
                   check=True, capture_output=True)
    (env / "bin" / "execbench").write_text(
        f"#!{python}\nimport sys\nfrom execbench.cli import app\nsys.exit(app())\n")
    (env / "bin" / "execbench").chmod(0o755)
    return env


def execbench(venv: Path, *args: object, expect: int = 0) -> subprocess.CompletedProcess[str]:
    """The environment's ``execbench ARGS``, run in its root, which must exit ``expect``."""
    env = {"PATH": f"{venv / 'bin'}:{os.defpath}", "HOME": str(venv),
           "SHADOW_MARK": str(venv / "shadow-imported"), "COLUMNS": "200"}
    done = subprocess.run([venv / "bin" / "execbench", *map(str, args)], cwd=venv.parent,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == expect, done.stderr
    return done


def test_an_installed_plugin_builds_runs_and_reports_like_a_built_in(venv: Path) -> None:
    tasks = execbench(venv, "ls", "tasks").stdout
    assert "return-type        the type of the value a call returns [types] " \
           "(plugin: execbench-tiny 0.1)" in tasks
    assert "types              return-type" in tasks  # its family
    assert "oneliners  one-line functions of x: key, expr, inputs (plugin: execbench-tiny 0.1)" \
        in execbench(venv, "ls", "formats").stdout
    assert "echo/<text>                answers every prompt with <text> (plugin: execbench-tiny" \
        in execbench(venv, "ls", "models").stdout

    execbench(venv, "build", "humaneval", "--tasks", "return-type", "--limit", 3,
              "--out", "suite")
    truths = [json.loads(line)["truth"] for line in (venv.parent / "suite" /
                                                      "instances.jsonl").open()]
    assert {"bool", "list", "float"} == set(truths)
    execbench(venv, "run", "--suite", "suite", "--model", "reference/oracle", "--out", "run")
    results = json.loads((venv.parent / "run" / "results.json").read_text())
    assert results["metrics"]["return-type"]["all"]["pass@1"] == 1.0
    assert results["counts"]["samples"] == len(truths)
    shown = json.loads(execbench(venv, "report", "run", "--format", "json").stdout)
    assert any("return-type pass@1" in column for table in shown["tables"]
               for column in table["columns"])

    # the plugin's format is detected from a file's keys, and its model answers
    (venv.parent / "lines.jsonl").write_text(
        '{"key": "double", "expr": "2 * x", "inputs": ["1", "2.5", "\'ab\'"]}\n')
    execbench(venv, "build", "lines.jsonl", "--tasks", "return-type", "--out", "lines")
    manifest = json.loads((venv.parent / "lines" / "manifest.json").read_text())
    assert manifest["sources"][0]["format"] == "oneliners"
    execbench(venv, "run", "--suite", "lines", "--model", "echo/float", "--out", "echoed")
    verdicts = [json.loads(line)["verdict"] for line in (venv.parent / "echoed" /
                                                         "samples.jsonl").open()]
    assert verdicts == ["incorrect", "correct", "incorrect"]  # int, float, str


def test_a_plugin_cannot_take_a_built_in_name_nor_stop_what_does_not_name_it(
        venv: Path) -> None:
    listed = execbench(venv, "ls", "tasks")
    output = "output             predict the value a call returns (CRUXEval-O style) [prediction]"
    assert output in listed.stdout.splitlines()
    assert "warning: task 'output' of the entry point 'output = execbench_hostile.shadow:OUTPUT' "\
           "(execbench.tasks) of execbench-hostile 6.6 is not used: execbench has a built-in " \
           "task of that name" in listed.stderr
    def broken(kind: str, group: str, attribute: str) -> str:
        return (f"{kind} 'broken' cannot be loaded from the entry point 'broken = "
                f"execbench_hostile.broken:{attribute}' (execbench.{group}) of "
                "execbench-hostile 6.6: RuntimeError: this plugin is broken")

    assert f"broken             {broken('task', 'tasks', 'TASK')}" in listed.stdout.splitlines()
    assert "return-type" in listed.stdout  # the rest are listed
    formats = execbench(venv, "ls", "formats").stdout.splitlines()
    assert f"broken     {broken('format', 'formats', 'FORMAT')}" in formats
    models = execbench(venv, "ls", "models").stdout.splitlines()
    assert f"broken/...                 {broken('model provider', 'models', 'PROVIDER')}" \
        in models

    # nothing that does not name them stops: --tasks and a build's format detection read
    # every task and format (the tiny plugin's format is detected past the broken one)
    execbench(venv, "build", "humaneval", "--tasks", "prediction", "--limit", 1,
              "--out", "plain")
    refused = execbench(venv, "build", "humaneval", "--tasks", "broken", "--limit", 1,
                        "--out", "broken", expect=2)
    assert refused.stderr.splitlines()[-1] == f"error: {broken('task', 'tasks', 'TASK')}"
    refused = execbench(venv, "run", "--suite", "plain", "--model", "broken/m", "--out",
                        "nowhere", expect=2)
    assert refused.stderr.splitlines()[-1] == \
        f"error: {broken('model provider', 'models', 'PROVIDER')}"
    assert not (venv.parent / "nowhere").exists(), "refused before the run folder is made"
    assert not (venv / "shadow-imported").exists(), "the shadowing module was never imported"
