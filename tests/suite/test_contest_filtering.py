"""The contest filters, one at a time and as the ``yang`` preset, on nine solutions whose
drops are stated by hand below."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from execbench.manifest import Manifest
from execbench.sources.contest_filters import PRESETS, ContestFilters
from execbench.suite import BuildOptions, SuiteError, build_suite
from tests.helpers.cli import execbench

# A plain solution: 120-odd characters, a few dozen line events on its call.
PLAIN = """\
def firstRepeat(nums: List[int]) -> int:
    seen = set()
    for x in nums:
        if x in seen:
            return x
        seen.add(x)
    return -1"""
# PLAIN laid out otherwise, with comments: the same syntax tree.
PLAIN_AGAIN = """\
def firstRepeat(nums: List[int]) -> int:
    # remember what went by
    seen = set( )
    for x in nums:
        if x in seen:  return x
        seen.add(x)
    return -1"""
SUMMED = """\
def firstRepeat(nums: List[int]) -> int:
    counts = Counter()
    for x in nums:
        counts[x] += 1
        if counts[x] == 2:
            return x
    return -1"""
INDEXED = """\
def firstRepeat(nums: List[int]) -> int:
    for j in range(len(nums)):
        for i in range(j):
            if nums[i] == nums[j]:
                return nums[j]
    return -1"""
SORTED = """\
def firstRepeat(nums: List[int]) -> int:
    best = -1
    where = {}
    for i, x in enumerate(nums):
        if x in where and best == -1:
            best = x
        where[x] = i
    return best"""
SHORT = "def firstRepeat(nums):\n    return next((x for x in nums if nums.count(x) > 1), -1)"
# 895 characters, mostly comments, around a cheap body.
LONG = "def total(nums: List[int]) -> int:\n" + "    # padding line of the long one\n" * 24 \
    + "    return sum(nums)"
# Over 10,000 bytecode operations: a dozen or so per turn of a loop of 1,500.
SLOW = """\
def total(nums: List[int]) -> int:
    result = 0
    for k in range(1500):
        result += nums[k % len(nums)]
    return result"""
QUICK = """\
def total(nums: List[int]) -> int:
    result = 0
    for x in nums:
        result = result + x * 1
    return result + len(nums) * 0"""


def _record(number: int, question: str, code: str, name: str, call: str,
            output: str) -> dict[str, Any]:
    return {"id": f"s{number}", "question_id": question, "contest_id": "c",
            "contest_date": "2024-01-01", "function_name": name, "code": code,
            "input": f"{name}({call})", "output": output}


RECORDS = [
    _record(1, "q1", SHORT, "firstRepeat", "nums = [1, 2, 1]", "1"),
    _record(2, "q1", PLAIN, "firstRepeat", "nums = [3, 4, 3]", "3"),
    _record(3, "q1", PLAIN_AGAIN, "firstRepeat", "nums = [5, 6, 5]", "5"),
    _record(4, "q1", SUMMED, "firstRepeat", "nums = [7, 7]", "7"),
    _record(5, "q1", INDEXED, "firstRepeat", "nums = [8, 9, 8]", "8"),
    _record(6, "q1", SORTED, "firstRepeat", "nums = [2, 2]", "2"),
    _record(7, "q2", LONG, "total", "nums = [1, 2]", "3"),
    _record(8, "q2", SLOW, "total", "nums = [1, 2]", "2250"),
    _record(9, "q2", QUICK, "total", "nums = [4, 5]", "9"),
]
"""What each filter drops, by hand: ``min_chars`` 100 drops s1 (SHORT, 82 characters);
``max_chars`` 800 drops s7 (LONG, 895); ``dedupe ast`` drops s3 (PLAIN again);
``max_steps_per_call`` 1,000 drops s8 (SLOW, over 10,000 bytecode operations); ``max_per_question``
3 alone drops s4, s5 and s6 (q1's fourth to sixth); after the other four filters, q1 has s2,
s4, s5 and s6 left, and the cap drops s6."""


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("contest") / "lcb.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in RECORDS))
    return path


def _kept(suite: Path) -> list[str]:
    return sorted({json.loads(line)["program_id"].split("/")[1]
                   for line in (suite / "instances.jsonl").open()})


def test_the_hand_counts_hold() -> None:
    assert (len(SHORT), len(PLAIN) >= 100, len(LONG)) == (82, True, 895)


ALL = ["s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"]


@pytest.mark.parametrize(("filters", "dropped", "gone"), [
    (ContestFilters(min_chars=100), {"min_chars": 1}, {"s1"}),
    (ContestFilters(max_chars=800), {"max_chars": 1}, {"s7"}),
    (ContestFilters(dedupe="ast"), {"dedupe": 1}, {"s3"}),
    (ContestFilters(max_steps_per_call=1000), {"max_steps_per_call": 1}, {"s8"}),
    (ContestFilters(max_per_question=3), {"max_per_question": 3}, {"s4", "s5", "s6"}),
], ids=["min-chars", "max-chars", "dedupe", "steps", "per-question"])
def test_each_filter_alone(source: Path, tmp_path: Path, filters: ContestFilters,
                           dropped: dict[str, int], gone: set[str]) -> None:
    manifest = build_suite([str(source)], tmp_path, BuildOptions(
        tasks=["output"], workers=1, contest_filters=filters)).to_record()
    assert manifest["contest_filtered"] == dropped
    assert _kept(tmp_path) == sorted(set(ALL) - gone)
    skips = [s for s in manifest["skipped"] if s.get("task") == "contest_filters"]
    assert sorted(s["where"].split("/")[1] for s in skips) == sorted(gone)
    assert all(s["kind"] == "not_applicable" for s in skips)
    assert manifest["contest_filters"] == {**dict.fromkeys(
        ["min_chars", "max_chars", "dedupe", "max_steps_per_call", "max_per_question"]),
        **{k: v for k, v in filters.to_record().items() if v is not None}}


def test_the_preset_runs_every_filter_in_order(source: Path, tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    done = execbench("build", source, "--out", suite, "--tasks", "output",
                     "--contest-filters", "yang")
    assert done.exit_code == 0, done.stderr
    assert "left out by the contest filters: 5 programs (1 min_chars; 1 max_chars; " \
           "1 dedupe; 1 max_steps_per_call; 1 max_per_question)" in done.stdout
    manifest = json.loads((suite / "manifest.json").read_text())
    assert manifest["contest_filters"] == {"min_chars": 100, "max_chars": 800, "dedupe": "ast",
                                           "max_steps_per_call": 1000, "max_per_question": 3}
    assert _kept(suite) == ["s2", "s4", "s5", "s9"]
    assert manifest["counts"]["programs"] == 4
    read = Manifest.from_record(manifest)
    assert read.recipe.contest_filters == PRESETS["yang"]
    assert read.contest_filtered == {"min_chars": 1, "max_chars": 1, "dedupe": 1,
                                     "max_steps_per_call": 1, "max_per_question": 1}
    # a single filter replaces the preset's value: a cap of 4 keeps s6 too
    again = tmp_path / "again"
    done = execbench("build", source, "--out", again, "--tasks", "output",
                     "--contest-filters", "yang", "--max-per-question", "4")
    assert done.exit_code == 0, done.stderr
    assert _kept(again) == ["s2", "s4", "s5", "s6", "s9"]


# 200 turns of a loop: some 400 line events, but well over 1,000 bytecode operations (a
# dozen a turn on every supported Python): the limit counts the latter, as the paper does.
MIDDLE = """\
def total(nums: List[int]) -> int:
    result = 0
    for k in range(200):
        result += nums[k % len(nums)]
    return result"""


def test_the_limit_counts_bytecode_operations_not_lines(tmp_path: Path) -> None:
    source = tmp_path / "lcb.jsonl"
    source.write_text(json.dumps(_record(1, "q", MIDDLE, "total", "nums = [1, 2]", "300"))
                      + "\n" + json.dumps(_record(2, "q", QUICK, "total", "nums = [4]", "4"))
                      + "\n")
    manifest = build_suite([str(source)], tmp_path / "suite", BuildOptions(
        tasks=["output"], workers=1,
        contest_filters=ContestFilters(max_steps_per_call=1000))).to_record()
    assert _kept(tmp_path / "suite") == ["s2"]
    [skip] = [s for s in manifest["skipped"] if s.get("task") == "contest_filters"]
    operations = int(skip["reason"].split()[3].replace(",", ""))
    assert skip["reason"] == (f"a call ran {operations:,} bytecode operations, more than "
                              "--max-steps-per-call 1,000")
    assert 2_000 < operations < 5_000


def test_a_build_without_filters_keeps_every_solution_and_says_nothing(
        source: Path, tmp_path: Path) -> None:
    manifest = build_suite([str(source)], tmp_path, BuildOptions(tasks=["output"], workers=1))
    record = manifest.to_record()
    assert "contest_filtered" not in record and "contest_filters" not in record
    assert _kept(tmp_path) == ALL


def test_filters_on_no_contest_source_are_refused(tmp_path: Path) -> None:
    source = tmp_path / "mine.jsonl"
    source.write_text(json.dumps({"id": "p", "code": "def f(x):\n    return x\n",
                                  "entry_point": "f", "calls": ["1"]}) + "\n")
    with pytest.raises(SuiteError, match="no source is one"):
        build_suite([str(source)], tmp_path / "suite", BuildOptions(
            tasks=["output"], contest_filters=ContestFilters(min_chars=10)))


@pytest.mark.parametrize(("options", "message"), [
    (["--contest-filters", "paper"], "--contest-filters is one of yang, not 'paper'"),
    (["--dedupe", "names"], "--dedupe is one of ast, not 'names'"),
    (["--min-chars", "0"], "--min-chars must be at least 1, not 0"),
    (["--min-chars", "900", "--max-chars", "800"],
     "no solution has at least 900 and at most 800 characters (--min-chars, --max-chars)"),
    (["--contest-filters", "yang", "--min-chars", "801"],
     "no solution has at least 801 and at most 800 characters"),
])
def test_settings_no_build_can_use_are_refused(source: Path, tmp_path: Path,
                                               options: list[str], message: str) -> None:
    done = execbench("build", source, "--out", tmp_path / "suite", *options)
    assert done.exit_code == 2
    assert message in done.stderr
    assert not (tmp_path / "suite").exists()
