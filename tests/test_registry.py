"""The generic registry: lookups with a suggestion, lazy entries, population on first use."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from execbench.registry import Registry, UnknownName


def test_an_unknown_name_gets_the_closest_ones_and_the_list() -> None:
    colours: Registry[int] = Registry("colour")
    colours.register("green", 2)
    colours.register("red", 1)
    assert colours.get("red") == 1 and colours.names() == ["green", "red"]
    with pytest.raises(UnknownName) as error:
        colours.get("gren")
    assert str(error.value) == "unknown colour 'gren'; did you mean 'green'? known colours: " \
                               "green, red"
    assert str(colours.unknown(["blue", "rde"])) == (
        "unknown colours 'blue', 'rde'; did you mean 'red'? known colours: green, red")
    with pytest.raises(ValueError, match="colour 'red' is registered twice"):
        colours.register("red", 3)


def test_a_lazy_entry_is_imported_when_first_looked_up() -> None:
    sys.modules.pop("colorsys", None)
    spaces: Registry[object] = Registry("space")
    spaces.register_lazy("hls", "colorsys:rgb_to_hls")
    assert spaces.names() == ["hls"] and "hls" in spaces
    assert "colorsys" not in sys.modules
    assert spaces.get("hls")(1.0, 0.0, 0.0) == (0.0, 0.5, 1.0)


def test_a_populating_module_is_imported_on_the_first_lookup_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "registers_c.py").write_text(
        "from tests.test_registry import THINGS\nTHINGS.register('c', 3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    THINGS.register("b", 2)
    THINGS.register("a", 1)
    assert "registers_c" not in sys.modules, "registering does not populate"
    assert THINGS.names() == ["a", "b", "c"]
    THINGS.unregister("a")
    assert "a" not in THINGS and THINGS.get("c") == 3


THINGS: Registry[int] = Registry("thing", populate="registers_c", sort=True)
