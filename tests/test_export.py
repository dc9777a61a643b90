"""``execbench export``: the three layouts reload with their libraries and hold the same
rows; splits never cut a program family; an evaluation suite's programs, their mutants
and their copies under other names are left out, each with its reason."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from execbench import export
from execbench.export import (
    EXPORT_MANIFEST,
    ExportError,
    ExportOptions,
    export_suite,
    family,
    normalised,
    parse_splits,
)
from execbench.rewards import read_truth
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task
from execbench.tasks.asking import ask
from execbench.tasks.protocol import Protocol
from tests.helpers.cli import execbench
from tests.helpers.data import padded_suite

pyarrow = pytest.importorskip("pyarrow", reason="the export extra (pyarrow) is not installed")
datasets = pytest.importorskip("datasets", reason="the export extra (datasets) is not installed")

CODE = {
    "grow": "def grow(xs):\n    out = []\n    for x in xs:\n        if x > 1:\n"
            "            out.append(x * 2)\n    return out\n",
    "count": "def count(s, c):\n    n = 0\n    for ch in s:\n        if ch == c:\n"
             "            n += 1\n    return n\n",
    "mid": "def mid(a, b, c):\n    if a < b:\n        if b < c:\n            return b\n"
           "        return max(a, c)\n    return min(a, c) if b < c else b\n",
    "shift": "def shift(xs, k):\n    k = k % len(xs)\n    return xs[k:] + xs[:k]\n",
    "mean": "def mean(xs):\n    total = 0\n    for x in xs:\n        total += x\n"
            "    return total / len(xs)\n",
    "last": "def last(s):\n    i = len(s) - 1\n    while i >= 0 and s[i] == ' ':\n"
            "        i -= 1\n    return s[i] if i >= 0 else ''\n",
}
CALLS = {"grow": ["[1, 2, 3]", "[5]"], "count": ["'banana', 'a'", "'xyz', 'q'"],
         "mid": ["1, 2, 3", "3, 1, 2"], "shift": ["[1, 2, 3], 1", "[4, 5], 3"],
         "mean": ["[1, 2]", "[3]"], "last": ["'ab  '", "'   '"]}


def _source(folder: Path, name: str, programs: dict[str, str], **meta: str) -> Path:
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps({"id": key, "code": code, "entry_point": key,
                                        "calls": CALLS[key], **({"meta": meta} if meta else {})})
                            + "\n" for key, code in programs.items()))
    return path


@pytest.fixture(scope="module")
def suites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("export")
    progs = _source(folder, "progs", CODE, date="2024-03-01")
    build_suite([str(progs)], folder / "originals",
                BuildOptions(tasks=["output", "input", "coverage"], workers=2))
    # the mutation task on a mutant replaces the instance's mutation with its own mutant's
    build_suite([str(progs)], folder / "mutants",
                BuildOptions(tasks=["output", "input", "mutation"], workers=2, mutate=True))
    # the same programs, laid out and commented anew, under other names
    copies = {f"copy_{key}": "# a copy\n" + code.replace("    ", "  ") for key, code in
              list(CODE.items())[:2]}
    for key in copies:
        CALLS[key] = CALLS[key.removeprefix("copy_")]
    copied = _source(folder, "copies", {k: v.replace(k.removeprefix("copy_") + "(", k + "(", 1)
                                        for k, v in copies.items()})
    build_suite([str(copied), str(_source(folder, "others", {"mean": CODE["mean"]}))],
                folder / "mixed", BuildOptions(tasks=["output"], workers=2))
    return {"originals": folder / "originals", "mutants": folder / "mutants",
            "mixed": folder / "mixed"}


def test_the_three_layouts_hold_the_same_rows(suites: dict[str, Path], tmp_path: Path) -> None:
    suite = suites["originals"]
    options = {"splits": parse_splits("train=0.5,test=0.5"), "seed": 1, "shots": 1,
               "licences": {"progs": "CC0-1.0"}}
    for layout in ("verl", "hf", "jsonl"):
        export_suite(suite, tmp_path / layout, ExportOptions(layout=layout, **options))
    jsonl = {split: [json.loads(line) for line in
                     (tmp_path / "jsonl" / f"{split}.jsonl").read_text().splitlines()]
             for split in ("train", "test")}
    loaded = datasets.load_from_disk(str(tmp_path / "hf"))
    assert sorted(loaded) == ["test", "train"]
    _, instances, sha = load_suite(suite)
    by_id = {i.id: i for i in instances}
    for split in ("train", "test"):
        verl = pyarrow.parquet.read_table(tmp_path / "verl" / f"{split}.parquet").to_pylist()
        hf = loaded[split].to_list()
        assert len(verl) == len(hf) == len(jsonl[split]) > 0
        for v, h, j in zip(verl, hf, jsonl[split], strict=True):
            assert h == j
            assert v["reward_model"] == {"style": "rule", "ground_truth": j["ground_truth"]}
            assert v["prompt"] == j["prompt"]
            assert v["extra_info"] == {key: j[key] for key in v["extra_info"]}
            instance = by_id[j["id"]]
            assert j["prompt"] == ask(get_task(instance.task), instance, Protocol(shots=1))
            assert read_truth(j["ground_truth"]).instance == instance
            assert (j["data_source"], j["ability"]) == (f"execbench/{instance.task}",
                                                        get_task(instance.task).family)
            assert (j["licence"], j["date"], j["shots"], j["suite_sha256"]) == \
                ("CC0-1.0", "2024-03-01", 1, sha)
    manifest = json.loads((tmp_path / "jsonl" / EXPORT_MANIFEST).read_text())
    assert manifest["rows"] == {"train": len(jsonl["train"]), "test": len(jsonl["test"])}
    assert manifest["families"] == {"train": 3, "test": 3}


def test_splits_keep_each_family_whole_and_repeat(suites: dict[str, Path],
                                                  tmp_path: Path) -> None:
    def export(seed: int, name: str) -> dict[str, str]:
        export_suite(suites["originals"], tmp_path / name,
                     ExportOptions(splits=parse_splits("train=0.67,test=0.33"), seed=seed))
        return {split: (tmp_path / name / f"{split}.jsonl").read_text()
                for split in ("train", "test")}

    first, again, other = export(7, "a"), export(7, "b"), export(8, "c")
    assert first == again and first != other
    split_of: dict[str, set[str]] = {}
    for split, text in first.items():
        for row in map(json.loads, text.splitlines()):
            split_of.setdefault(row["family"], set()).add(split)
    assert all(len(splits) == 1 for splits in split_of.values())
    assert sorted(len([f for f, s in split_of.items() if split in s])
                  for split in ("train", "test")) == [2, 4]


def test_a_mutant_whose_parent_is_evaluated_is_left_out(suites: dict[str, Path],
                                                        tmp_path: Path) -> None:
    _, mutants, _ = load_suite(suites["mutants"])
    assert mutants and all(i.program_id.endswith("@mutant") for i in mutants)
    summary = export_suite(suites["mutants"], tmp_path / "out",
                           ExportOptions(exclude=(suites["originals"],)))
    assert summary.rows == {"train": 0}
    assert len(summary.dropped) == len(mutants)
    assert all("program family" in d["reason"] and str(suites["originals"]) in d["reason"]
               for d in summary.dropped)
    # without the evaluation suite, every mutant is exported, with its family and mutation
    summary = export_suite(suites["mutants"], tmp_path / "out", ExportOptions())
    rows = [json.loads(line) for line in (tmp_path / "out" / "train.jsonl").read_text()
            .splitlines()]
    assert len(rows) == len(mutants)
    assert {row["task"] for row in rows} == {"output", "input", "mutation"}
    assert all(row["family"] == row["program_id"].removesuffix("@mutant") for row in rows)
    assert all(json.loads(row["mutation"])["original_id"] == row["family"]
               for row in rows if row["task"] != "mutation")


def test_a_copy_under_another_name_is_left_out_by_its_text(suites: dict[str, Path],
                                                           tmp_path: Path) -> None:
    summary = export_suite(suites["mixed"], tmp_path / "out",
                           ExportOptions(exclude=(suites["originals"],)))
    reasons = {d["id"]: d["reason"] for d in summary.dropped}
    assert {i.split("/")[2] for i in reasons} == {"copy_grow", "copy_count", "mean"}
    # program ids carry their source's name, so only the text ties these to the originals
    assert all("text is in evaluation suite" in reason for reason in reasons.values())
    assert summary.manifest["dropped"]["by_reason"] == {"text in an evaluation suite": 6}
    assert summary.rows == {"train": 0}


def test_normalised_text_ignores_layout_comments_and_docstrings() -> None:
    a = "def f(x):\n    '''Doc.'''\n    # note\n    return x+1\n"
    b = "def f(x):\n  return (x + 1)  # other\n"
    assert normalised(a) == normalised(b) != normalised(b.replace("1", "2"))
    assert normalised(a.replace("f(", "g("), entry_point="g") == normalised(b, entry_point="f")
    assert normalised(a.replace("f(", "g("), entry_point="f") != normalised(b, entry_point="f")
    assert normalised("int f() {  return 1; }", "c") == normalised("int f() { return 1; }", "c")


def test_bad_options_are_refused_in_one_line(suites: dict[str, Path], tmp_path: Path) -> None:
    for text, why in [("train=0.5", "sum to 0.5"), ("train", "NAME=FRACTION"),
                      ("train=x,test=1", "not a number"), ("a=0.5,a=0.5", "once")]:
        with pytest.raises(ExportError, match=why):
            parse_splits(text)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    result = execbench("export", str(suites["originals"]), "--out", str(tmp_path / "busy"))
    assert result.exit_code == 2 and "holds files and no earlier export" in result.stderr
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"
    result = execbench("export", str(suites["originals"]), "--out", str(tmp_path / "x"),
                     "--tasks", "simulation")
    assert result.exit_code == 2 and "the suite has no task simulation" in result.stderr
    result = execbench("export", str(suites["originals"]), "--out", str(tmp_path / "x"),
                     "--format", "parquet")
    assert result.exit_code == 2 and "unknown layout 'parquet'" in result.stderr
    result = execbench("export", str(suites["originals"]), "--out", str(tmp_path / "x"),
                     "--split", "train=0.9,test=0.1", "--tasks", "output")
    assert result.exit_code == 0, result.stderr
    assert "exported 12 rows" in result.stderr


def test_family_is_the_original_of_a_variant(suites: dict[str, Path]) -> None:
    _, mutants, _ = load_suite(suites["mutants"])
    assert {family(i) for i in mutants} <= {f"progs/{name}" for name in CODE}
    assert all(family(i) == i.program_id.removesuffix("@mutant") for i in mutants)


def test_rows_are_written_in_batches_with_one_schema(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Parquet is written a batch at a time: a first batch whose rows have no date fixes no
    column of nulls that later rows' dates cannot join, and every layout holds the rows the
    JSON lines hold, in their order."""
    monkeypatch.setattr(export._Writer, "BATCH", 2)
    undated = _source(tmp_path, "undated", {key: CODE[key] for key in ("grow", "count")})
    dated = _source(tmp_path, "dated", {key: CODE[key] for key in ("mid", "shift", "mean")},
                    date="2025-01-02")
    build_suite([str(undated), str(dated)], tmp_path / "suite",
                BuildOptions(tasks=["output", "input"], workers=1))
    for layout in ("verl", "hf", "jsonl"):
        export_suite(tmp_path / "suite", tmp_path / layout, ExportOptions(layout=layout))
    jsonl = [json.loads(line) for line in
             (tmp_path / "jsonl" / "train.jsonl").read_text().splitlines()]
    dates = [j["date"] for j in jsonl]
    assert dates[:2] == [None, None] and "2025-01-02" in dates[2:], dates
    assert datasets.load_from_disk(str(tmp_path / "hf"))["train"].to_list() == jsonl
    assert not [p for p in (tmp_path / "hf").iterdir() if p.name.startswith(".export-")]
    table = pyarrow.parquet.read_table(tmp_path / "verl" / "train.parquet")
    assert table.schema.field("extra_info").type.field("date").type == pyarrow.string()
    assert [v["extra_info"] for v in table.to_pylist()] == \
        [{key: j[key] for key in table.to_pylist()[0]["extra_info"]} for j in jsonl]


def test_an_export_holds_no_suite_in_memory(suites: dict[str, Path], tmp_path: Path) -> None:
    """A suite of 48 MB (its programs padded with a 200 KB comment) is read twice as a
    stream and its rows written as they come: Python's allocations peak at a small part of
    it (before, the export held the suite and every row)."""
    import tracemalloc

    lines = (suites["originals"] / "instances.jsonl").read_bytes().splitlines()
    big, copies = padded_suite(suites["originals"], tmp_path / "suite")
    size = (big / "instances.jsonl").stat().st_size
    for layout in ("jsonl", "verl"):
        tracemalloc.start()
        try:
            summary = export_suite(big, tmp_path / layout, ExportOptions(layout=layout))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert summary.rows == {"train": copies * len(lines)}
        assert peak < size / 4, (layout, peak, size)


def test_an_export_that_fails_half_way_leaves_the_earlier_one(
        suites: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows are written into a folder beside ``--out`` that takes its place only once
    complete: a failure on the tenth row leaves the earlier export whole and nothing else,
    so the same command can simply be run again."""
    from execbench import rewards

    out = tmp_path / "data"
    for layout in ("jsonl", "verl", "hf"):
        export_suite(suites["originals"], out, ExportOptions(layout="jsonl", seed=1))
        before = {path.name: path.read_bytes() for path in out.iterdir()}
        real, calls = rewards.truth_text, []

        def failing(*args: object, real=real, calls=calls) -> str:
            calls.append(1)
            if len(calls) == 10:
                raise OSError("disk full")
            return real(*args)

        monkeypatch.setattr(rewards, "truth_text", failing)
        with pytest.raises(OSError, match="disk full"):
            export_suite(suites["originals"], out, ExportOptions(layout=layout, seed=2))
        monkeypatch.undo()
        assert {path.name: path.read_bytes() for path in out.iterdir()} == before
        assert sorted(path.name for path in tmp_path.iterdir()) == ["data"], layout
    export_suite(suites["originals"], out, ExportOptions(layout="verl", seed=2))
    assert sorted(path.name for path in out.iterdir()) == [EXPORT_MANIFEST, "train.parquet"]
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o777 & ~umask  # not mkdtemp's private folder
