"""The order samples and names are read in: numbers by value, wrong answers first."""

from __future__ import annotations

from execbench.reports.ordering import natural, verdict_rank


def test_digit_runs_sort_by_value_and_the_rest_as_text() -> None:
    ids = ["sample_120", "sample_12", "sample_115", "sample_2", "sample_116", "sample_1"]
    assert sorted(ids, key=natural) == ["sample_1", "sample_2", "sample_12", "sample_115",
                                        "sample_116", "sample_120"]
    paths = ["output/p10/0", "output/p2/11", "output/p2/3", "input/p9/0"]
    assert sorted(paths, key=natural) == ["input/p9/0", "output/p2/3", "output/p2/11",
                                          "output/p10/0"]


def test_the_order_is_total_over_odd_names() -> None:
    """Two spellings of one number, digits of other scripts, and characters that
    ``str.isdigit`` accepts but ``int`` refuses (``²``) all sort without error, always
    the same way."""
    names = ["x07", "x7", "x²", "x٣", "x", "7", "", "x10"]
    once = sorted(names, key=natural)
    assert once == sorted(reversed(names), key=natural)
    assert once == ["", "7", "x", "x٣", "x07", "x7", "x10", "x²"]


def test_wrong_and_unreadable_answers_come_before_no_answer_and_correct_ones() -> None:
    verdicts = ["correct", "error", "unparsable", "scoring_error", "incorrect"]
    assert sorted(verdicts, key=verdict_rank) == ["unparsable", "incorrect", "error",
                                                  "scoring_error", "correct"]
