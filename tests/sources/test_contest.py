"""Contest records with dates (LiveCodeBench's execution shape), the preamble contest
solutions assume, and ``build --after``/``--before``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from execbench.sources import detect_format, load_source
from execbench.sources.contest import call_arguments, preamble_for
from execbench.sources.jsonl import RecordError
from tests.helpers.cli import execbench

PAIRS = """\
def countPairs(nums: List[int], target: int) -> int:
    seen = defaultdict(int)
    total = 0
    for x in nums:
        total += seen[target - x]
        seen[x] += 1
    return total"""
MIDDLE = """\
def middleValue(values: List[int]) -> int:
    head = None
    for v in reversed(values):
        head = ListNode(v, head)
    slow = fast = head
    while fast and fast.next:
        slow = slow.next
        fast = fast.next.next
    return slow.val"""
SMALLEST = """\
def kSmallest(nums: List[int], k: int) -> List[int]:
    heap = []
    for x in nums:
        heappush(heap, -x)
        if len(heap) > k:
            heappop(heap)
    return sorted(-x for x in heap)"""


def _record(number: int, date: str, name: str, code: str, call: str, output: str,
            **extra: Any) -> dict[str, Any]:
    return {"id": f"sample_{number}", "question_id": str(100 + number),
            "contest_id": f"weekly-contest-{number}", "contest_date": date,
            "difficulty": "easy", "function_name": name, "code": code, "input": call,
            "output": output, **extra}


RECORDS = [
    _record(1, "2023-03-05T00:00:00", "countPairs", PAIRS,
            "countPairs(nums = [1, 2, 3, 2, 1], target = 3)", "4"),
    _record(2, "2024-07-14T00:00:00", "middleValue", MIDDLE,
            "middleValue(values = [5, 8, 13, 21, 34])", "13"),
    _record(3, "2024-09-01", "kSmallest", SMALLEST, "kSmallest(nums = [7, 2, 9, 4, 1], k = 2)",
            "[1, 2]"),
    _record(4, "2024-01-01T00:00:00", "countPairs", PAIRS,
            "countPairs(nums = [3, 0, 3, 0], target = 3)", "4"),
]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_a_program_gets_the_preamble_lines_it_uses_and_no_others() -> None:
    assert preamble_for(PAIRS) == ("from collections import defaultdict\n"
                                   "from typing import List")
    middle = preamble_for(MIDDLE)
    assert middle.startswith("from typing import List\n\n\nclass ListNode:")
    assert "TreeNode" not in middle
    code = ("import math\n\ndef gcd(a, b):\n    return a if b == 0 else gcd(b, a % b)\n\n"
            "def f(xs: list) -> int:\n    count = 0\n    for x in xs:\n"
            "        count += gcd(x, 6) + math.floor(x / 2) + inf\n    return count")
    assert preamble_for(code) == "from math import inf"  # gcd, math and count are its own
    assert preamble_for("def f():\n    return bisect.bisect_left([1, 3], 2)") == "import bisect"


def test_the_call_is_read_as_its_arguments() -> None:
    assert call_arguments(" f(nums = [1, (2, 3)], k = 'a)b') ", "f") \
        == "nums = [1, (2, 3)], k = 'a)b'"
    assert call_arguments("f()", "f") == ""
    with pytest.raises(RecordError, match="call of f"):
        call_arguments("g(1)", "f")
    with pytest.raises(RecordError, match="does not parse"):
        call_arguments("f(1", "f")


def test_a_contest_file_loads_with_dates_and_bad_records_are_skipped(tmp_path: Path) -> None:
    bad = [_record(5, "yesterday", "countPairs", PAIRS, "countPairs(nums = [1], target = 1)",
                   "0"),
           _record(6, "2024-02-02", "countPairs", PAIRS, "other(nums = [1], target = 1)", "0"),
           _record(7, "2024-02-02", "solve", "class Solution:\n    def solve(self):\n"
                   "        return 1", "solve()", "1")]
    path = _write(tmp_path / "lcb.jsonl", RECORDS + bad)
    assert detect_format(path) == "contest"
    loaded = load_source(str(path))
    assert [p.id for p in loaded.programs] == [f"lcb/sample_{n}" for n in (1, 2, 3, 4)]
    first = loaded.programs[0]
    assert first.meta == {"date": "2023-03-05", "question_id": "101",
                          "contest_id": "weekly-contest-1", "difficulty": "easy",
                          "chars": 185}
    assert first.entry_point == "countPairs"
    assert first.calls[0].args == "nums = [1, 2, 3, 2, 1], target = 3"
    assert first.calls[0].expected == "4"
    assert first.code.endswith(PAIRS) and first.code.startswith("from collections import")
    reasons = [skip.reason for skip in loaded.skipped]
    assert len(reasons) == 3
    assert "'yesterday' is not a date" in reasons[0]
    assert "should be a call of countPairs" in reasons[1]
    assert "'solve' is not defined at module level" in reasons[2]


def test_after_keeps_exactly_the_later_programs_and_the_oracle_gets_them_right(
        tmp_path: Path) -> None:
    source = _write(tmp_path / "lcb.jsonl", RECORDS)
    suite, run = tmp_path / "suite", tmp_path / "run"
    done = execbench("build", source, "--out", suite, "--after", "2024-01-01",
                     "--tasks", "output,input,mutation,choice")
    assert done.exit_code == 0, done.stderr
    assert "left out by date: 2 programs (2 dated on or before 2024-01-01 (--after))" \
        in done.stdout
    manifest = json.loads((suite / "manifest.json").read_text())
    assert manifest["after"] == "2024-01-01" and "before" not in manifest
    assert manifest["counts"]["skipped"]["not_applicable"] == {"dates": 2}
    instances = [json.loads(line) for line in (suite / "instances.jsonl").open()]
    assert {i["program_id"] for i in instances} == {"lcb/sample_2", "lcb/sample_3"}
    # the ListNode program builds and runs with the class it needs shown above it
    middle = next(i for i in instances if i["program_id"] == "lcb/sample_2")
    assert "class ListNode:" in middle["code"] and middle["truth"]["repr"] == "13"
    # the mutation and choice tasks find a mutant of the heap program, as on CRUXEval
    assert {i["task"] for i in instances if i["program_id"] == "lcb/sample_3"} \
        == {"output", "input", "mutation", "choice"}
    done = execbench("run", "--suite", suite, "--model", "reference/oracle", "--out", run)
    assert done.exit_code == 0, done.stderr
    samples = [json.loads(line) for line in (run / "samples.jsonl").open()]
    assert len(samples) == len(instances)
    assert {s["verdict"] for s in samples} == {"correct"}


def test_before_and_both_bounds(tmp_path: Path) -> None:
    source = _write(tmp_path / "lcb.jsonl", RECORDS)
    for options, kept in ((["--before", "2024-01-01"], {"sample_1"}),
                          (["--after", "2023-12-31", "--before", "2024-09-01T08:00"],
                           {"sample_2", "sample_4"})):
        suite = tmp_path / "-".join(options).replace(":", "")
        done = execbench("build", source, "--out", suite, "--tasks", "output", *options)
        assert done.exit_code == 0, done.stderr
        ids = {json.loads(line)["program_id"].split("/")[1]
               for line in (suite / "instances.jsonl").open()}
        assert ids == kept


def test_dates_in_generic_records_and_clear_errors(tmp_path: Path) -> None:
    code = "def f(x):\n    return x + 1\n"
    generic = _write(tmp_path / "mine.jsonl", [
        {"id": "old", "code": code, "entry_point": "f", "calls": ["1"],
         "meta": {"date": "2022-01-01"}},
        {"id": "new", "code": code, "entry_point": "f", "calls": ["2"],
         "meta": {"date": "2025-06-01"}},
        {"id": "undated", "code": code, "entry_point": "f", "calls": ["3"]}])
    suite = tmp_path / "generic"
    done = execbench("build", generic, "--out", suite, "--after", "2024-12-31")
    assert done.exit_code == 0, done.stderr
    assert {json.loads(line)["program_id"] for line in (suite / "instances.jsonl").open()} \
        == {"mine/new"}
    assert "1 no date, and --after or --before keeps dated programs only" in done.stdout
    wrong = [(["--after", "2024-02-30"], "--after: '2024-02-30' is not a date"),
             (["--after", "2024-05-01", "--before", "2024-05-01"],
              "no day is after 2024-05-01 and before 2024-05-01"),
             (["--limit", "2", "--after", "2020-01-01"], None)]
    for options, message in wrong:
        done = execbench("build", "humaneval", "--out", tmp_path / "he", *options)
        assert done.exit_code == 2
        assert (message or "no program in the given sources has one") in done.stderr
