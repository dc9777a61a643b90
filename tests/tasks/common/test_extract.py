"""CodeSense's ``<ans>`` tags beside our ``[ANSWER]`` block."""

from __future__ import annotations

from execbench.tasks.common.extract import codesense_answer_text


def test_ans_tags_win_and_the_first_one_is_taken() -> None:
    read = codesense_answer_text
    assert read("think... <ans>[1, 2]</ans> or maybe <ans>3</ans>") == "[1, 2]"
    assert read("<think><ans>9</ans></think>[ANSWER]\n4\n[/ANSWER]") == "4"
    assert read("[ANSWER]\n'a'\n[/ANSWER]") == "'a'"
    assert read(None) is None and read("<ans> </ans>") is None
