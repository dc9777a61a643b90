"""Recording the calls a test makes with arguments it builds while it runs."""

from __future__ import annotations

import pytest

from execbench.sources.replay import PER_SITE, ReplayError, TestCalls, definitions_only

CODE = "def f(xs):\n    xs.append(1)\n    return len(xs)\n"


def test_only_definitions_and_assignments_of_the_test_are_kept_line_for_line() -> None:
    test = "import math\nN = 3\n\ndef check(f):\n    pass\n\ncheck(\n    f)\nprint(1)\n"
    assert definitions_only(test) == "import math\nN = 3\n\ndef check(f):\n    pass\n\n\n\n\n"


def test_each_site_keeps_its_first_calls_as_the_test_passed_them() -> None:
    test = ("def check(candidate):\n"
            "    for n in range(3 * PER):\n"
            "        candidate([n] * (n % 3))\n"
            "    candidate(xs=[7])\n").replace("PER", str(PER_SITE))
    with TestCalls() as calls:
        recorded = calls.record(CODE, "f", test, "check", {3, 4})
    assert recorded.by_line == {3: [repr([n] * (n % 3)) for n in range(PER_SITE)],
                                4: ["xs=[7]"]}
    assert recorded.unwritable == 0


def test_arguments_with_no_literal_form_are_counted_apart() -> None:
    test = "def check(candidate):\n    candidate([object()])\n    candidate([2])\n"
    with TestCalls() as calls:
        recorded = calls.record(CODE, "f", test, "check", {2, 3})
    assert recorded.by_line == {3: ["[2]"]}
    assert recorded.unwritable == 1


def test_a_test_that_cannot_run_says_why() -> None:
    with TestCalls() as calls, pytest.raises(ReplayError, match="failed"):
        calls.record(CODE, "f", "def check(candidate):\n    pass\n", "nowhere", {2})
