"""The threat model (docs/threat-model.md) stays true to the tests: every test a row names
exists, and every surface the project takes outside input through has a row."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "docs" / "threat-model.md"
NAMED_TEST = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")

SURFACES = ("dataset files", "folders of programs", "project trees", "project archives",
            "dependency lists", "recorded traces", "model replies", "model-written code",
            "model endpoints", "reward requests", "run folders", "templates", "plugins",
            "answers files", "model cards", "package index", "git histories")
"""Each kind of outside input named in the issue that asked for the threat model, and the
ones found since; a new surface is added here and to the document together."""


def _rows() -> list[list[str]]:
    rows = []
    for line in MODEL.read_text(encoding="utf-8").splitlines():
        if line.startswith("|") and not set(line) <= set("|- "):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows[1:]  # the header


def test_every_named_test_exists() -> None:
    named = NAMED_TEST.findall(MODEL.read_text(encoding="utf-8"))
    assert len(named) >= 20
    missing = [f"{path}::{name}" for path, name in named
               if not (ROOT / path).is_file()
               or not re.search(rf"^(async )?def {name}\(", (ROOT / path).read_text(), re.M)]
    assert not missing, missing


def test_every_surface_has_a_row_with_a_guard_and_a_test() -> None:
    rows = _rows()
    first = [row[0].lower() for row in rows]
    for surface in SURFACES:
        assert any(surface in cell for cell in first), surface
    for row in rows:
        assert len(row) == 5, row
        surface, who, guard, test, open_ = row
        assert who and guard and open_, row
        assert NAMED_TEST.search(test), f"{surface}: no test named"
