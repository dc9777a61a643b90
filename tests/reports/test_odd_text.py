"""Odd text on every writer: a run whose model replies, and whose dataset, hold lone
surrogates, NUL, terminal escape sequences, line separators, a BOM, bidi overrides, very
long lines and ``</script>``, put through every command that writes text (report in each
format and as a page, show, score, export in each layout). Each must finish, write valid
UTF-8, keep the text's meaning where it writes JSON, and never hand a reply's control
characters to a terminal or its ``</script>`` to a page.

The replies are drawn by a seeded fuzzer from hostile pieces (one run is made, the costly
part); the shared helper behind the writers (``execbench.text_safety``) is checked on many
more texts with hypothesis in ``test_text_safety.py``.
"""

from __future__ import annotations

import base64
import csv
import gzip
import io
import itertools
import json
import random
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from execbench.runner import RunConfig, run
from execbench.suite import BuildOptions, build_suite
from execbench.text_safety import visible
from tests.fakeserver import FakeServer, Reply
from tests.helpers.cli import execbench
from tests.helpers.fake_model import FAKE_MODEL

PIECES = ["\ud800", "\udfff", "\udbff", "\udc00", "\x00", "\x1b[2J", "\x1b]0;owned\x07",
          "\x1b]8;;http://example.invalid\x1b\\link\x1b]8;;\x1b\\", "\x9b31m", "\x85", "\r",
          "\x7f", "\x08", "\u2028", "\u2029", "\ufeff", "\u202e", "\u2066", "\u200f",
          "</script><script>alert(1)</script>", "</SCRIPT >", "<!--", "]]>", "&amp;",
          "=HYPERLINK(\"http://example.invalid\")", "+1", "-2", "@SUM(A1)", "|", "\t",
          "\n", "\\u0000", ":smile:", "[b]bold[/b]", "plain words", "é漢字🙂"]
"""What a reply is made of, beside ordinary text."""
LONG_LINE = "x" * 30_000 + "\x1b[2J" + "y" * 30_000
"""A very long line with an escape sequence in its middle."""
SOURCE = "odd\x1b[2J=cmd"
"""The dataset's file name, hence its source name: dataset text reaches the writers too."""
PROGRAM = {"id": "p</script><script>\u202e", "entry_point": "f",
           "calls": ["55296", "57343", "27"],
           "code": "def f(x):\n    # \u202e\u2028\ufeff \x1b]0;t\x07 </script>\n"
                   "    return chr(x) + '\x1b[2J'\n"}
"""A program whose truths are lone surrogates and ESC, with hostile text in its code."""
HOSTILE_MODEL = "=cmd|'/c calc'!A0 \x1b]0;owned\x07\ud800\u202e</script><script>"
"""The model a foreign run folder's files name: a report may read someone else's run."""
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e"
                    "\u2066-\u2069\u200e\u200f\u061c\ufeff]")
"""What no text meant for a terminal may hold: control characters (but newline and tab),
lone surrogates, line separators, bidi controls and the BOM."""
SAMPLES = 4


def _replies(seed: int, count: int) -> list[str]:
    """``count`` replies of 1-12 hostile pieces each, most in answer tags (so the answer,
    and with it the verdict's detail, carries them too), one a very long line."""
    rng = random.Random(seed)
    replies = []
    for number in range(count):
        body = "".join(rng.choices(PIECES, k=rng.randint(1, 12)))
        replies.append(f"[ANSWER]{body}[/ANSWER]" if number % 3 else body)
    replies[1] = f"[ANSWER]{LONG_LINE}[/ANSWER]"
    return replies


@pytest.fixture(scope="module")
def odd_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A suite built from a hostile dataset, a run of a model answering it with fuzzed
    hostile replies (one request in seven refused with a hostile error message), and a
    copy of that run whose files name a hostile model."""
    folder = tmp_path_factory.mktemp("odd-text")
    source = folder / f"{SOURCE}.jsonl"
    source.write_text(json.dumps(PROGRAM) + "\n", encoding="utf-8")
    suite = folder / "suite"
    build_suite([str(source)], suite, BuildOptions(tasks=["output", "input"], workers=1))
    replies = _replies(36, 6 * SAMPLES)
    counter = itertools.count()
    sent: list[Reply] = []

    def responder(body: dict[str, Any], attempt: int) -> Reply:
        number = next(counter)
        text = replies[number % len(replies)]
        reply = Reply.error(400, text) if number % 7 == 3 else Reply(
            text=text, reasoning=replies[(number + 5) % len(replies)])
        sent.append(reply)
        return reply

    out = folder / "run"
    with FakeServer(responder) as server:
        run(RunConfig(suite=str(suite), model=FAKE_MODEL, base_url=server.base_url,
                      n=SAMPLES), out)
    answered = [reply for reply in sent if reply.status == 200]
    return {"folder": folder, "suite": suite, "run": out,
            "foreign": _renamed(out, folder / "foreign", HOSTILE_MODEL),
            "texts": {_received(reply.text) for reply in answered},
            "reasoning": {_received(reply.reasoning) for reply in answered}}


def _received(text: str | None) -> str | None:
    """``text`` as the client read it: JSON joins a high and a low surrogate that meet."""
    return json.loads(json.dumps(text))


def _renamed(run: Path, copy: Path, model: str) -> Path:
    """A copy of ``run`` whose files name ``model`` (and ``results.json`` the folder too),
    as a run folder someone else made may."""
    shutil.copytree(run, copy)
    for name in ("results.json", "run.json"):
        record = json.loads((copy / name).read_text(encoding="utf-8"))
        if name == "run.json":
            record["model"] = record["pinned"]["model"] = model
        else:
            record["run"].update(model=model, run_dir=model)
        (copy / name).write_text(json.dumps(record, indent=2), encoding="utf-8")
    return copy


def _ran(*args: object) -> tuple[str, str]:
    """``execbench ARGS``'s stdout and stderr, after checking that it succeeded and wrote
    valid UTF-8 to both."""
    done = execbench(*args)
    stderr = done.stderr_bytes.decode("utf-8") if done.stderr_bytes else ""
    assert done.exit_code == 0, (args, stderr)
    return done.stdout_bytes.decode("utf-8"), stderr


def _for_a_terminal(text: str, what: str) -> None:
    """``text`` holds nothing that could drive a terminal or hide what it shows."""
    found = UNSAFE.search(text)
    assert found is None, f"{what}: {found.group()!r} at {found.start()}: " \
                          f"{text[max(0, found.start() - 40):found.start() + 40]!r}"


@pytest.mark.parametrize("fmt", ["text", "markdown", "csv", "json"])
def test_report_tables_show_odd_text_visibly(odd_run: dict[str, Any], fmt: str) -> None:
    stdout, stderr = _ran("report", odd_run["run"], odd_run["foreign"], "--format", fmt,
                          "--verdicts")
    _for_a_terminal(stdout, f"report --format {fmt}")
    _for_a_terminal(stderr, f"report --format {fmt} (stderr)")
    if fmt == "json":
        labels = [row["run"] for table in json.loads(stdout)["tables"]
                  for row in table["rows"]]
        assert any(HOSTILE_MODEL in label for label in labels)
    if fmt == "csv":
        for row in csv.reader(io.StringIO(stdout)):
            for cell in row:
                assert not cell.startswith(("=", "+", "@")), cell
                assert not cell.startswith("-") or _number(cell), cell


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_html_page_escapes_odd_text(odd_run: dict[str, Any]) -> None:
    page_path = odd_run["folder"] / "page" / "report.html"
    _, stderr = _ran("report", odd_run["run"], odd_run["foreign"], "--html", page_path)
    _for_a_terminal(stderr, "report --html (stderr)")
    page = page_path.read_bytes().decode("utf-8")
    # the template's own two script elements, and nothing a reply or a dataset closed
    assert len(re.findall(r"</script", page, re.IGNORECASE)) == 2
    assert "<script>alert" not in page
    assert "\x00" not in page and not re.search("[\ud800-\udfff]", page)
    packed = re.search(r'id="sample-data"[^>]*>([^<]*)</script>', page)
    assert packed is not None
    data = json.loads(gzip.decompress(base64.b64decode(packed.group(1))))
    shown = [row[data["columns"].index("response")] for run in data["runs"]
             for row in run["rows"]]
    assert len(shown) == 2 * 6 * SAMPLES
    for text in shown:
        _for_a_terminal(text.replace("\n", "").replace("\t", ""), "a response in the page")
    assert any("\\x1b[2J" in text for text in shown)  # shown, as an escape


def test_show_text_never_hands_escapes_to_the_terminal(odd_run: dict[str, Any]) -> None:
    for folder in (odd_run["run"], odd_run["foreign"]):
        stdout, stderr = _ran("show", folder, "--limit", 1000)
        _for_a_terminal(stdout, "show")
        _for_a_terminal(stderr, "show (stderr)")
        assert "\\x1b[2J" in stdout and "\\ud800" in stdout and "\\u202e" in stdout
        assert LONG_LINE.replace("\x1b", "\\x1b") in stdout
        for text in odd_run["texts"]:  # each reply whole, as its escapes
            assert visible(text) in stdout


def test_messages_show_odd_text_visibly(odd_run: dict[str, Any], tmp_path: Path) -> None:
    """What the CLI says on stderr (here: that a run's suite is gone, naming the path its
    run.json gives) shows that text's control characters as escapes too."""
    moved = tmp_path / "run"
    shutil.copytree(odd_run["run"], moved)
    config = json.loads((moved / "run.json").read_text(encoding="utf-8"))
    config["suite"] = str(tmp_path / "gone\x1b]0;owned\x07\u202e")
    (moved / "run.json").write_text(json.dumps(config), encoding="utf-8")
    stdout, stderr = _ran("show", moved, "--limit", 1)
    _for_a_terminal(stdout + stderr, "show of a run whose suite is gone")
    assert "gone\\x1b]0;owned\\x07\\u202e is gone" in stderr


def test_show_json_keeps_each_reply_as_it_was(odd_run: dict[str, Any]) -> None:
    stdout, _ = _ran("show", odd_run["foreign"], "--format", "json", "--limit", 1000)
    _for_a_terminal(stdout, "show --format json")
    shown = json.loads(stdout)
    assert shown["model"] == HOSTILE_MODEL
    responses = {sample["response"] for sample in shown["samples"]} - {None}
    assert responses == odd_run["texts"]
    reasoning = {sample["reasoning"] for sample in shown["samples"]} - {None}
    assert reasoning == odd_run["reasoning"]
    errors = [sample["error"] for sample in shown["samples"] if sample["error"]]
    assert errors and all(error.startswith("HTTP 400") for error in errors)


def test_score_rewrites_the_run_files_as_they_were(odd_run: dict[str, Any],
                                                   tmp_path: Path) -> None:
    """Re-scoring reads the odd log back and writes it again: the same bytes, valid UTF-8."""
    again = tmp_path / "run"
    shutil.copytree(odd_run["run"], again)
    before = (again / "samples.jsonl").read_bytes()
    stdout, stderr = _ran("score", again)
    _for_a_terminal(stdout + stderr, "score")
    after = (again / "samples.jsonl").read_bytes()
    assert after == before
    for name in ("samples.jsonl", "results.json", "run.json"):
        (again / name).read_bytes().decode("utf-8")


@pytest.mark.parametrize("layout", ["jsonl", "verl", "hf"])
def test_export_writes_odd_dataset_text(odd_run: dict[str, Any], layout: str) -> None:
    if layout != "jsonl":
        pytest.importorskip("pyarrow")
    if layout == "hf":
        pytest.importorskip("datasets")
    out = odd_run["folder"] / f"export-{layout}"
    stdout, stderr = _ran("export", odd_run["suite"], "--out", out, "--format", layout)
    _for_a_terminal(stdout + stderr, f"export --format {layout}")
    truths = _exported_truths(out, layout)
    assert len(truths) == 6
    values = {json.dumps(truth["instance"]["truth"], sort_keys=True) for truth in truths}
    assert any("\\ud800" in value for value in values)  # the lone surrogate, kept as JSON
    for path in out.rglob("*"):
        if path.suffix in (".json", ".jsonl"):
            path.read_bytes().decode("utf-8")


def _exported_truths(out: Path, layout: str) -> list[dict[str, Any]]:
    """The ground truths an export wrote, parsed."""
    if layout == "jsonl":
        rows = [json.loads(line) for line in (out / "train.jsonl").read_bytes().splitlines()]
        return [json.loads(row["ground_truth"]) for row in rows]
    if layout == "verl":
        import pyarrow.parquet

        table = pyarrow.parquet.read_table(out / "train.parquet").to_pylist()
        return [json.loads(row["reward_model"]["ground_truth"]) for row in table]
    import datasets

    return [json.loads(row["ground_truth"]) for row in datasets.load_from_disk(str(out))["train"]]


def test_figures_draw_odd_labels(report_runs: list[Path], tmp_path: Path) -> None:
    """Every layout's figure, of a run whose files name a hostile model (a lone surrogate
    stopped the drawing, and with it the page; a ``$`` pair was read as mathematics)."""
    pytest.importorskip("matplotlib")
    foreign = _renamed(report_runs[0], tmp_path / "foreign", HOSTILE_MODEL + " $\\undefined{x}$")
    page = tmp_path / "page.html"
    plots = tmp_path / "plots"
    _, stderr = _ran("report", foreign, "--html", page, "--layout", "generalization",
                     "--plot", tmp_path / "figure.png", "--plots", plots)
    _for_a_terminal(stderr, "report --plot (stderr)")
    assert (tmp_path / "figure.png").read_bytes().startswith(b"\x89PNG")
    text = page.read_bytes().decode("utf-8")
    assert "No figure" not in text
    written = {path.name: path.read_bytes() for path in plots.iterdir()}
    drawn = {name.removesuffix(".png") for name in written if name.endswith(".png")}
    assert drawn >= {"ces", "codesense", "dexbench", "generalization"}
    assert set(written) == {f"{name}.{fmt}" for name in drawn for fmt in ("png", "svg")}
    assert text.count("data:image/png;base64,") == len(drawn)  # the page has them all
    for name, data in written.items():
        if name.endswith(".png"):
            assert data.startswith(b"\x89PNG")
        else:
            svg = data.decode("utf-8")
            assert "<svg" in svg and "<path" in svg and "\ud800" not in svg


def test_figures_read_runs_from_where_they_are(report_runs: list[Path], tmp_path: Path) -> None:
    """A figure gets its runs' text escaped for drawing, but not where the run and its
    suite are: a folder whose name holds ``$`` or a control character is still read (the
    paired-differences figure read no samples from such a folder, and drew nothing)."""
    from execbench.reports.layouts import _drawn
    from execbench.rundir import read_results

    odd = tmp_path / "a $x$ \x1b b"
    shutil.copytree(report_runs[1], odd)
    result = read_results(odd)
    drawn = _drawn(result)
    assert drawn.run_dir == str(odd) and drawn.config.suite == result.config.suite
    assert (Path(drawn.run_dir) / "samples.jsonl").is_file()


@pytest.mark.parametrize("written", [b"{not json", b"[" * 100_000, json.dumps(
    {"schema_version": 1, "run": {"model": 3}}).encode()], ids=["broken", "deep", "partial"])
def test_a_run_whose_results_cannot_be_read_is_skipped_and_said(
        written: bytes, report_runs: list[Path], tmp_path: Path) -> None:
    """A folder whose results.json cannot be read is skipped with its reason: the page of
    the other runs is still written (it paired the wrong folders with the runs, and
    stopped), and a comparison that now lacks a run says which and why."""
    bad = tmp_path / "bad"
    shutil.copytree(report_runs[1], bad)
    (bad / "results.json").write_bytes(written)
    page = tmp_path / "page.html"
    _, stderr = _ran("report", report_runs[0], bad, "--html", page)
    _for_a_terminal(stderr, "report with a bad run (stderr)")
    assert f"{bad}: its results.json cannot be read" in " ".join(stderr.split())
    assert "reference/oracle" in page.read_text(encoding="utf-8")
    refused = execbench("report", report_runs[0], bad, "--compare")
    said = " ".join(refused.stderr.split())
    assert refused.exit_code == 2 and "takes two runs with results, not 1" in said
    assert f"{bad}: its results.json cannot be read" in said
