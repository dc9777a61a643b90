"""The size of the function a CodeSense question is asked in (``analysis.shape
.function_loc``), which every CodeSense score records (``function_lines``), and the bins
the report groups sizes and block lengths by (``FUNCTION_SIZE_BINS``, ``BLOCK_SIZE_BINS``,
defined beside the generalization study's ``LOC_BINS``)."""

from __future__ import annotations

import gzip
import json

from execbench.analysis.shape import (
    BLOCK_SIZE_BINS,
    FUNCTION_SIZE_BINS,
    bin_order,
    c_like_loc,
    function_loc,
)
from tests.helpers.data import SHARED_DATA, needs_shared_data

MODULE = '''\
import os

HELPER = 1


@cache
@trace(
    level=2)
def f(x):
    """Docstrings count, as loc counts them."""
    # a comment line does not

    y = x + 1
    return y


def g():
    return 0
'''


def test_a_python_function_is_counted_alone_from_its_first_decorator() -> None:
    # Decorators (3 lines), def, docstring, two statements; not the imports nor g.
    assert function_loc(MODULE, "f") == 7
    assert function_loc(MODULE, "g") == 2
    # No such function, or text that does not parse: the whole text, by loc's rule.
    assert function_loc(MODULE, "missing") == 11
    assert function_loc("def broken(:\n    pass\n", "broken") == 2


C_CODE = '''\
static int
count(const char *s) /* counts */
{
\t// a comment line
\t/* a comment
\t   over lines */
\tint n = 0;  // trailing comment

\tconst char *mark = "// not a comment /*";
\tchar quote = '"';
\twhile (*s++) n++;
\treturn n;
}
'''


def test_c_and_java_lines_leave_out_comments_but_not_literals() -> None:
    # static int, count(...), {, int n, mark (its // is in a string), quote, while,
    # return, }.
    assert c_like_loc(C_CODE) == 9
    assert function_loc(C_CODE, "count", "c") == 9
    assert function_loc(C_CODE, "count", "java") == 9
    # A literal the text leaves open ends at its line.
    assert c_like_loc('char *s = "open\nint x;\n') == 2


@needs_shared_data("codesense/input_output_dataset_c.jsonl.gz")
def test_the_published_c_functions_count_as_their_publishers_code_length() -> None:
    # CodeSense's ``code_length`` counts non-blank lines, comment lines too; the published
    # C functions have no comment-only line, so both counts agree on all 93.
    with gzip.open(SHARED_DATA / "codesense" / "input_output_dataset_c.jsonl.gz", "rt") as f:
        records = [json.loads(line) for line in f]
    assert len(records) == 93
    assert all(c_like_loc(r["code"]) == r["code_length"] for r in records)


def test_function_sizes_are_the_papers_small_medium_and_large() -> None:
    sizes = FUNCTION_SIZE_BINS
    assert sizes.names == ("1-9", "10-19", "20+")
    assert [sizes.of(n) for n in (1, 9, 10, 19, 20, 516)] == [
        "1-9", "1-9", "10-19", "10-19", "20+", "20+"]
    assert sizes.of(0) == "<1"
    assert [sizes.label(name) for name in sizes.names] == [
        "small: 1-9", "medium: 10-19", "large: 20+"]
    assert sizes.label("<1") == "<1"


def test_block_sizes_keep_the_papers_one_two_three_then_double() -> None:
    blocks = BLOCK_SIZE_BINS
    assert blocks.names == ("1", "2", "3", "4-7", "8-15", "16-31", "32-63", "64+")
    assert [blocks.of(k) for k in (1, 2, 3, 4, 7, 8, 15, 16, 63, 64, 247)] == [
        "1", "2", "3", "4-7", "4-7", "8-15", "8-15", "16-31", "32-63", "64+", "64+"]
    assert sorted(reversed(blocks.names), key=bin_order) == list(blocks.names)
    assert sorted(reversed(FUNCTION_SIZE_BINS.names), key=bin_order) == list(
        FUNCTION_SIZE_BINS.names)


def test_output_questions_in_codesense_style_record_their_function_size(tmp_path) -> None:
    """The paper splits output accuracy by function size too: an output question asked in
    CodeSense's style (here ``-T values=abstract``) records the lines of its function, as
    the CodeSense tasks' questions do; a CRUXEval-style one records none."""
    from execbench.suite import BuildOptions, build_suite, load_suite
    from execbench.tasks import get_task
    from execbench.tasks.registry import judge

    source = tmp_path / "p.jsonl"
    source.write_text(json.dumps({"id": "p", "entry_point": "f", "calls": ["3"], "code": (
        "def f(x):\n    # a comment\n    y = x * 2\n\n    return y\n")}) + "\n")
    for options, lines in (({"values": "abstract"}, 3), ({}, None)):
        suite = tmp_path / f"suite-{lines}"
        build_suite([str(source)], suite, BuildOptions(tasks=["output"], workers=1,
                                                       task_options=options))
        [instance] = load_suite(suite)[1]
        right = get_task("output").asking.reference_response(instance)
        assert judge(instance, right, None).extra.get("function_lines") == lines
