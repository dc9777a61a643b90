"""User templates: refused in one line before anything is sent when they cannot ask the
task's question, and rendered in a sandbox that reaches no Python internals and builds no
huge value."""

from __future__ import annotations

from pathlib import Path

import pytest

from execbench.tasks import get_task, task_names, templating
from execbench.tasks.asking import ask, check_templates
from execbench.tasks.protocol import EVERY_TASK, Protocol
from execbench.tasks.templating import (
    COMMON_VARS,
    MAX_RENDERED,
    MAX_TEMPLATE,
    PromptTemplateError,
    check,
    render_user,
    shipped,
)
from tests.tasks.test_prediction import hand_instance

OUTPUT_VARS = (*COMMON_VARS, *get_task("output").asking.template_vars)


@pytest.mark.parametrize(("text", "says"), [
    ("{{ code }} {{ secret }}", "names secret, which task 'output' does not give"),
    ("Answer {{ call }}.", "never shows code or numbered_code"),
    ("{% for x in %}{{ code }}", "does not parse (line 1"),
    ("{{ code }}" + " " * MAX_TEMPLATE, "more than 200,000"),
    ("{{ code }}{% include 'output.j2' %}", "a template is one file"),
    ("{% extends 'output.j2' %}{{ code }}", "a template is one file"),
])
def test_a_template_that_cannot_ask_the_question_is_refused(text: str, says: str) -> None:
    with pytest.raises(PromptTemplateError) as refused:
        check(text, "output", OUTPUT_VARS)
    assert says in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("text", [
    "{{ code.__class__.__mro__ }}",
    "{{ code.__class__.__subclasses__() }}",
    "{{ cycler.__init__.__globals__ }}",
    "{{ examples.append(1) }}",
    "{{ 'x' * 10 ** 8 }}",
    "{{ [code] * 10 ** 7 }}",
    "{{ 2 ** 100000 }}",
    "{% for i in range(10 ** 9) %}{% endfor %}",
    "{% for i in range(100000) %}{{ code }}{% endfor %}",
    "{{ '{0.__class__}'.format(code) }}",
])
def test_a_template_reaching_past_its_variables_or_growing_huge_fails_in_one_line(
        text: str) -> None:
    variables = {"code": "def f(x):\n    return x\n" * 10, "examples": []}
    with pytest.raises(PromptTemplateError) as failed:
        render_user(text, variables)
    assert "\n" not in str(failed.value)


@pytest.mark.parametrize(("text", "says"), [
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
     "{{ code }}", "took more than 2 s"),
    ("{% macro m(n) %}{% if n %}{{ m(n - 1) }}{{ m(n - 1) }}{% endif %}{% endmacro %}"
     "{{ m(40) }}{{ code }}", "took more than 2 s"),
    # these build a gigabyte before the cap: on a busy machine the clock may come first
    ("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
     "{% endfor %}{{ code }}", "more memory|took more than 2 s"),
    ("{{ '%0999999999d' % 1 }}{{ code }}", "more memory|took more than 2 s"),
    ("{{ code.ljust(2000000000) }}", "more memory"),
    ("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}{{ code }}", "recursed too deep"),
])
def test_a_template_that_loops_or_grows_for_ever_stops_its_child_not_the_run(
        text: str, says: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Such a template passes the check (nothing of it runs there) and fails when rendered,
    in one line; the child is started again for the next prompt. The check computes no
    part of the template (a folded constant was computed there), so it is asked at the
    usual limit and says which variables the template reads."""
    check(text, "output", OUTPUT_VARS)
    monkeypatch.setattr(templating, "RENDER_SECONDS", 2.0)
    with pytest.raises(PromptTemplateError, match=says) as failed:
        render_user(text, {"code": "def f(x):\n    return x\n"})
    assert "\n" not in str(failed.value)
    monkeypatch.undo()  # the next prompt, in a child started again, at the usual limit
    assert render_user("{{ code }}!", {"code": "x = 1"}) == "x = 1!"


def test_a_user_template_asks_every_task_through_the_common_variables() -> None:
    """One template for every task but two: ``choice`` must show its two programs, and
    ``simulation`` the code with its placeholders."""
    text = "{{ style }}: {% for e in examples %}{{ e.answer }}{% endfor %}|{{ code }}"
    protocol = Protocol(templates={EVERY_TASK: text}, system="Be brief.")
    own = {"choice": "code_a", "simulation": "annotated"}
    check_templates(protocol, [get_task(n) for n in task_names() if n not in own], None)
    for name, needed in own.items():  # two programs; the code with its placeholders
        with pytest.raises(PromptTemplateError, match=f"never shows {needed}, which task"):
            check_templates(protocol, [get_task(name)], None)
    instance = hand_instance("output", truth={"value": ["int", 1], "repr": "1"})
    messages = ask(get_task("output"), instance, protocol)
    assert messages == [{"role": "system", "content": "Be brief."},
                        {"role": "user", "content": f"shipped: |{instance.code}"}]


def test_a_shipped_template_names_only_what_its_task_gives() -> None:
    for name in task_names():
        task = get_task(name)
        for template in task.asking.template_names:
            check(shipped(template), name, (*COMMON_VARS, *task.asking.template_vars),
                  task.asking.template_needs)


def test_a_rendered_prompt_past_the_cap_is_refused() -> None:
    big = "x" * (MAX_RENDERED // 2 + 1)
    with pytest.raises(PromptTemplateError, match="rendered prompt"):
        render_user("{{ code }}{{ code }}{{ code }}", {"code": big})


def test_the_cli_refuses_a_bad_template_before_anything_is_sent(tmp_path: Path) -> None:
    from tests.helpers.cli import execbench

    suite = tmp_path / "suite"
    execbench("build", "humaneval", "--out", str(suite), "--limit", "2", "--tasks", "output")
    bad = tmp_path / "bad.j2"
    bad.write_text("{{ code }} {{ nope }}")
    result = execbench("run", "--suite", str(suite), "--model", "reference/oracle",
                       "--out", str(tmp_path / "run"), "--template", str(bad))
    assert result.exit_code == 2
    assert "--template: the template names nope" in result.output
    assert not (tmp_path / "run").exists()
    other = execbench("run", "--suite", str(suite), "--model", "reference/oracle",
                      "--out", str(tmp_path / "run"), "--template", f"input={bad}")
    assert other.exit_code == 2 and "names input, not a task of this run" in other.output
    binary = tmp_path / "binary.j2"
    binary.write_bytes(b"\xff\xfe{{ code }}")
    third = execbench("run", "--suite", str(suite), "--model", "reference/oracle",
                      "--out", str(tmp_path / "run"), "--template", str(binary))
    assert third.exit_code == 2 and "is not UTF-8 text" in third.output


def test_ls_prints_a_shipped_template_and_every_task_s_variables() -> None:
    from tests.helpers.cli import execbench

    assert execbench("ls", "tasks", "--template", "output").output == shipped("output")
    listed = execbench("ls", "tasks", "--template-vars").output
    for name in task_names():
        assert f"\n{name} (shipped: " in listed
    assert "  given_note " in listed and "  annotated " in listed


def test_reading_a_templates_names_computes_none_of_it() -> None:
    """Jinja's code generator folds each constant a template outputs, whatever its
    optimizer is told: reading the names of ``{{ '%0199999999d' % 1 }}`` built a 200 MB
    string in the check's child (and at 1 GB, it met the child's limits in the check, not
    in the render). The names are read with no constant computed: no more than a few
    megabytes are allocated."""
    import tracemalloc

    from execbench.template_worker import _names

    tracemalloc.start()
    try:
        assert _names("{{ '%0199999999d' % 1 }}{{ code }}text") == ["code"]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000
