"""Model cards: dates read as days or months, a month cutoff covering the whole month, and
card files read whole or refused in one line, however they are made."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path

import pytest

from execbench.models.cards import (
    MAX_CARD_BYTES,
    CardError,
    ModelDates,
    dates_for,
    model_date,
    read_cards,
    with_cards,
)

CARDS = '''# release dates and cutoffs of the models we run
["openai/gpt-4o"]
release = 2024-05-13
cutoff = "2023-10"

["reference/oracle"]
cutoff = 2024-02-29
'''


@pytest.mark.parametrize(("given", "expected"), [
    ("2024-05-13", "2024-05-13"), ("2023-10", "2023-10"), (date(2024, 5, 13), "2024-05-13")])
def test_a_date_is_a_day_or_a_month(given: object, expected: str) -> None:
    assert model_date(given, "cutoff") == expected


@pytest.mark.parametrize("given", ["2023-13", "2023-02-30", "2023", "23-10", "2023-1",
                                   "2023-10-01T00:00", " 2023-10", "October 2023", 2023,
                                   None, ["2023-10"]])
def test_anything_else_is_refused_naming_the_setting(given: object) -> None:
    with pytest.raises(CardError, match="^--model-cutoff"):
        model_date(given, "--model-cutoff")


def test_a_month_cutoff_covers_the_whole_month_and_a_month_release_starts_it() -> None:
    assert ModelDates(cutoff="2023-10").cutoff_day() == date(2023, 10, 31)
    assert ModelDates(cutoff="2024-02").cutoff_day() == date(2024, 2, 29)   # leap year
    assert ModelDates(cutoff="2023-02").cutoff_day() == date(2023, 2, 28)
    assert ModelDates(cutoff="2023-10-15").cutoff_day() == date(2023, 10, 15)
    assert ModelDates(release="2024-05").release_day() == date(2024, 5, 1)
    assert ModelDates().cutoff_day() is None and ModelDates().release_day() is None


def test_a_cutoff_after_the_release_is_refused_one_in_the_same_month_is_not() -> None:
    with pytest.raises(CardError, match="cutoff 2024-06 is after release 2024-05"):
        ModelDates.checked("2024-05", "2024-06")
    assert ModelDates.checked("2024-05-01", "2024-05") == ModelDates("2024-05-01", "2024-05")
    assert ModelDates.checked("2024-05", "2024-05-31").cutoff == "2024-05-31"


def test_cards_are_read_by_model_name(tmp_path: Path) -> None:
    path = tmp_path / "cards.toml"
    path.write_text(CARDS)
    assert read_cards(path) == {"openai/gpt-4o": ModelDates("2024-05-13", "2023-10"),
                                "reference/oracle": ModelDates(None, "2024-02-29")}


def test_flags_override_the_card_and_a_missing_card_needs_a_flag(tmp_path: Path) -> None:
    path = tmp_path / "cards.toml"
    path.write_text(CARDS)
    assert dates_for("openai/gpt-4o", path, None, None) == ModelDates("2024-05-13", "2023-10")
    assert dates_for("openai/gpt-4o", path, None, "2023-12") == ModelDates("2024-05-13",
                                                                           "2023-12")
    assert dates_for("reference/oracle", path, "2024-03", None) == ModelDates("2024-03",
                                                                              "2024-02-29")
    assert dates_for("other/model", path, "2024-03", None) == ModelDates("2024-03", None)
    with pytest.raises(CardError, match="no card for 'other/model'.*'openai/gpt-4o'"):
        dates_for("other/model", path, None, None)
    assert dates_for("any/model", None, None, None) == ModelDates()


def test_a_runs_own_dates_win_over_its_card() -> None:
    cards = {"m": ModelDates("2024-05-13", "2023-10")}
    assert with_cards(ModelDates(), "m", cards) == ModelDates("2024-05-13", "2023-10")
    assert with_cards(ModelDates(cutoff="2023-06"), "m", cards) == ModelDates("2024-05-13",
                                                                              "2023-06")
    assert with_cards(ModelDates(), "other", cards) == ModelDates()


@pytest.mark.parametrize(("text", "said"), [
    ('["m"]\ncutoff = 2023-10\n', 'not TOML.*a month alone is written as text: cutoff = "2023-10"'),
    ("[m\n", "not TOML"),
    ('["m"]\ncutof = "2023-10"\n', r"\[\'m\'\] has 'cutof'; a card holds only release and cutoff"),
    ("[openai.gpt-4o]\ncutoff = '2023-10'\n", 'quoted: \\["openai/gpt-4o"\\]'),
    ('m = "2023-10"\n', r"\[\'m\'\] should be a table of release and cutoff"),
    ('["m"]\ncutoff = 2023-10-01T12:00:00\n', "a date and time"),
    ('["m"]\ncutoff = 202310\n', "not int"),
    ('["m"]\ncutoff = "2023-13"\n', "no day of the calendar"),
    ('["m"]\nrelease = 2023-01-01\ncutoff = 2024-01-01\n', "is after release"),
    ('["m\\u001b[31m"]\ncutoff = "x"\n', r"\\x1b"),
    ("a = " + "[" * 50_000 + "]" * 50_000 + "\n", "nested too deeply"),
    ("a = " + "{b=" * 5_000 + "1" + "}" * 5_000 + "\n", "nested too deeply"),
])
def test_a_hostile_card_file_is_refused_in_one_line(tmp_path: Path, text: str,
                                                    said: str) -> None:
    path = tmp_path / "cards.toml"
    path.write_text(text)
    with pytest.raises(CardError, match=said) as refused:
        read_cards(path)
    assert "\n" not in str(refused.value) and "\x1b" not in str(refused.value)


def test_a_huge_binary_or_special_card_file_is_refused_unread(tmp_path: Path) -> None:
    huge = tmp_path / "huge.toml"
    huge.write_text('["m"]\ncutoff = "2023-10"\n' + "# padding\n" * (MAX_CARD_BYTES // 10))
    with pytest.raises(CardError, match="larger than 1,048,576 bytes"):
        read_cards(huge)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b'["m"]\ncutoff = "\xff\xfe"\n')
    with pytest.raises(CardError, match="not UTF-8 text"):
        read_cards(binary)
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)  # no writer: a blocking open would hang
    with pytest.raises(CardError, match="not a regular file"):
        read_cards(fifo)
    with pytest.raises(CardError, match="cannot read"):
        read_cards(tmp_path)
    with pytest.raises(CardError, match="No such file"):
        read_cards(tmp_path / "missing.toml")
