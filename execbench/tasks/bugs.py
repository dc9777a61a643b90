"""Bug prediction, localization and repair (the CES paper's bug-related tasks, section 6.5).

Built only on programs whose source states a bug (HumanEvalPack, ``sources.bugs``); any
other program is skipped with that reason. Every instance of a program shows the same
error-revealing test: a call of the problem's own tests on which the buggy program does
not return what the canonical one returns (``sources.bugs.error_revealing_call``, chosen
with the seed), written ``assert f(ARGS) == EXPECTED`` with the canonical program's value.

* ``bug-prediction``: two instances per program, the buggy module (variant ``buggy``) and
  the canonical one (``fixed``), each with the test; the answer is ``yes`` (buggy) or
  ``no``. Besides pass@1, the share right on each variant is reported.
* ``bug-localization``: the buggy module with numbered lines and the test; the answer is
  a line number, right when it is one of the lines where the bug is (``bug_lines``).
* ``bug-repair``: the buggy module and the test; the answer is a corrected entry-point
  function. It is the one task that runs code a model wrote, and only in the sandbox: the
  candidate module is the buggy module followed by the answer (so the original's imports
  and helpers stay available), run on every test call of the problem; each value it
  returns is compared here, in the parent, with the canonical program's traced value by
  typed equality. The candidate can choose what it returns, never the verdict.

The prompts ask the model to explain how the test's call runs before answering (inside
``<REASONING>``, which extraction drops), as the simulation task does, and ``--shots 1``
adds worked examples: a buggy and a correct one for prediction, the buggy one otherwise.
"""

from __future__ import annotations

import ast
import difflib
import io
import re
from typing import TYPE_CHECKING, Any

from execbench.analysis.spans import first_line
from execbench.sources.bugs import WRONG_VALUE, Bug, Revealing, error_revealing_call
from execbench.sources.generic import parse_module, top_level_names
from execbench.sources.jsonl import RecordError
from execbench.tasks.base import (
    CORRECT,
    INCORRECT,
    BuildContext,
    Instance,
    Metric,
    Place,
    Score,
    SkipInstance,
    build_step_budget,
    pass_at_1,
)
from execbench.tasks.bugs_payload import (
    BugNote,
    BugPredictionSummary,
    BugQuestion,
    LocalizationQuestion,
    PredictionQuestion,
    RepairCall,
    RepairQuestion,
)
from execbench.tasks.common.answers import EMPTY, unparsable
from execbench.tasks.common.balance import NO, YES, balance_metrics, class_balance
from execbench.tasks.common.code import numbered
from execbench.tasks.common.extract import answer_text
from execbench.tasks.registry import register
from execbench.tasks.roles import Roles, Task
from execbench.tasks.templating import NUMBERED_CODE, TemplateVar
from execbench.values import equal, is_exact

if TYPE_CHECKING:
    from execbench.json_types import JSONObject, Recordable
    from execbench.kept import Kept
    from execbench.program import Program
    from execbench.sandbox.pool import Sandbox
    from execbench.sandbox.trace import Trace
    from execbench.tasks.protocol import Protocol

_EXAMPLE_BUGGY = '''\
def count_vowels(text):
    """Count the characters of text that are vowels (a, e, i, o, u), in either case."""
    count = 0
    for ch in text:
        if ch in "aeiou":
            count += 1
    return count'''
_EXAMPLE_FIXED = _EXAMPLE_BUGGY.replace('if ch in "aeiou":', 'if ch.lower() in "aeiou":')
_EXAMPLE_TEST = 'assert count_vowels("Oak") == 2'
_EXAMPLE_BUGGY_RUN = """\
count starts at 0 and the loop takes "O", "a", "k". "O" is upper case and "aeiou" holds \
only lower-case letters, so the condition is false and count stays 0. "a" is in "aeiou": count \
becomes 1. "k" is not. The call returns 1, but the test expects 2: upper-case vowels are \
never counted, though the docstring says either case counts. The fault is the condition \
on line 5."""
_EXAMPLE_FIXED_RUN = """\
count starts at 0 and the loop takes "O", "a", "k". "O".lower() is "o", which is in \
"aeiou": count becomes 1. "a" gives 2. "k".lower() is "k", not a vowel. The call returns \
2, which is what the test expects, and the docstring's rule (either case) is what the \
code does."""


def bug_lines(canonical: str, buggy: str, entry_point: str) -> list[int]:
    """The lines of the buggy module where its entry point differs from the canonical one.

    The two functions' non-blank lines (from ``def`` to the last statement, trailing
    spaces ignored) are compared with ``difflib.SequenceMatcher``: a changed or inserted
    line is a bug line; where lines were deleted, the buggy lines on both sides of the gap
    are (a missing statement is "at" the line before it and the line after it; at either
    end of the function, the one line there). Blank lines are left out so that a gap is
    never "at" an empty line. Line numbers are the buggy module's, as Python counts them.
    """
    buggy_lines = _function_lines(buggy, entry_point)
    canonical_lines = _function_lines(canonical, entry_point)
    matcher = difflib.SequenceMatcher(None, [text for _, text in canonical_lines],
                                      [text for _, text in buggy_lines], autojunk=False)
    found: set[int] = set()
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            found.update(range(j1, j2))
        elif tag == "delete":
            found.update({max(j1 - 1, 0), min(j1, len(buggy_lines) - 1)})
    return sorted(buggy_lines[j][0] for j in found)


def _function_lines(code: str, entry_point: str) -> list[tuple[int, str]]:
    """The module's entry-point function as its non-blank lines, each with its line
    number, trailing spaces removed."""
    start, end = _function_span(code, entry_point)
    return [(number, text.rstrip()) for number, text
            in enumerate(_lines(code)[start - 1:end], start) if text.strip()]


def function_source(code: str, entry_point: str) -> str:
    """The text of the module's entry-point function, decorators included."""
    start, end = _function_span(code, entry_point)
    return "".join(_lines(code)[start - 1:end]).rstrip() + "\n"


def _function_span(code: str, entry_point: str) -> tuple[int, int]:
    """The first and last line of the entry point's last top-level definition (the one a
    call reaches), decorators included."""
    node = [n for n in parse_module(code).body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == entry_point][-1]
    assert node.end_lineno is not None, "a parsed definition has its last line"
    return first_line(node), node.end_lineno


def _lines(code: str) -> list[str]:
    """Lines as Python numbers them (``splitlines`` would also split at form feeds)."""
    return io.StringIO(code, newline="").readlines()


def _example(code: str, worked: str, answer: str) -> dict[str, str]:
    """A worked example on the shared ``count_vowels`` test."""
    return {"code": code, "numbered_code": numbered(code), "test": _EXAMPLE_TEST,
            "worked": worked, "answer": f"[ANSWER]\n{answer}\n[/ANSWER]"}


_BUG_VARS = (TemplateVar("test", "the test, an assertion the function should pass"),
             NUMBERED_CODE,
             TemplateVar("entry_point", "the name of the function tested"))


class _BugTask(Roles):
    """What the three tasks share: the program's bug, its error-revealing call, the test."""

    family = "ces"
    template_vars = _BUG_VARS

    def _revealing(self, program: Program, ctx: BuildContext) -> tuple[Bug, Revealing]:
        bug = Bug.of(program)
        if bug is None:
            raise SkipInstance("the source states no bug for this program")
        found = error_revealing_call(program, bug, ctx.traced, ctx.sandbox,
                                     build_step_budget(ctx.sandbox), ctx.seed, ctx.memo)
        if found is None:
            raise SkipInstance("no call of the problem's tests reveals the bug")
        return bug, found

    def choose_calls(self, program: Program, traced: list[tuple[int, Trace]],
                     ctx: BuildContext) -> list[int]:
        """The error-revealing call; a program with no bug, or none that a call reveals,
        still gets its first call so that ``build`` records why it is skipped."""
        try:
            return [self._revealing(program, ctx)[1].index]
        except SkipInstance:
            return [index for index, _ in traced[:1]]

    def _common(self, program: Program, call_index: int, trace: Trace,
                ctx: BuildContext) -> tuple[Bug, BugQuestion]:
        bug, found = self._revealing(program, ctx)
        call = f"{program.entry_point}({program.calls[call_index].args})"
        shown = found.trace.value_repr if found.how == WRONG_VALUE else (
            found.trace.exception["type"] if found.trace.exception else found.trace.status)
        return bug, BugQuestion(f"assert {call} == {trace.value_repr}",
                                BugNote(bug.type, bug.symptoms, found.how, shown))

    def _variables(self, instance: Instance, test: str, examples: list[dict[str, str]],
                   protocol: Protocol) -> dict[str, Any]:
        """The three tasks' variables: the test, the code (numbered too), and with any
        ``--shots`` every example the task has."""
        return {"test": test, "numbered_code": numbered(instance.code),
                "entry_point": instance.entry_point,
                "examples": examples if protocol.shots else []}


_TRUTH = {"buggy": YES, "fixed": NO}
"""The answer each bug-prediction variant is right with (its class, ``common.balance``)."""


class BugPrediction(_BugTask):
    name = "bug-prediction"
    template_names = ("bug-prediction",)
    description = "say whether a function is buggy, given its docstring and a test"
    needs_sandbox = False
    summary_data: tuple[str, ...] = ("variant",)

    def metrics(self) -> tuple[Metric, ...]:
        return (pass_at_1(self.name),
                Metric("buggy", Place.summary(self.name, "buggy"),
                       description="share of answers right on the buggy variants"),
                Metric("fixed", Place.summary(self.name, "fixed"),
                       description="share of answers right on the fixed variants"),
                *balance_metrics(self.name))

    def build(self, program: Program, call_index: int, trace: Trace,
              ctx: BuildContext) -> list[Recordable]:
        bug, shown = self._common(program, call_index, trace, ctx)
        return [PredictionQuestion(shown.test, shown.bug, True, code=bug.code),
                PredictionQuestion(shown.test, shown.bug, False)]

    def prompt_vars(self, instance: Instance, protocol: Protocol) -> dict[str, Any]:
        examples = [_example(_EXAMPLE_BUGGY, _EXAMPLE_BUGGY_RUN, "yes"),
                    _example(_EXAMPLE_FIXED, _EXAMPLE_FIXED_RUN, "no")]
        test = PredictionQuestion.from_record(instance.data).test
        return self._variables(instance, test, examples, protocol)

    def reference_response(self, instance: Instance) -> str:
        return f"[ANSWER]\n{PredictionQuestion.from_record(instance.data).answer}\n[/ANSWER]"

    def score(self, instance: Instance, response: str | None,
              sandbox: Sandbox | None) -> Score:
        question = PredictionQuestion.from_record(instance.data)
        extra: JSONObject = {"variant": question.variant}
        text = answer_text(response)
        found = re.match(r"\s*(yes|no)\b", text or "", re.IGNORECASE)
        if found is None:
            return unparsable(text, "expected yes or no" if text else EMPTY, extra)
        said = found.group(1).lower()
        verdict = CORRECT if said == question.answer else INCORRECT
        return Score(verdict, answer=said, extra=extra)

    def summarize(self, samples: list[Kept],
                  instances: dict[str, Instance]) -> BugPredictionSummary:
        """The share of samples right on each variant (a failed request counts as wrong):
        a model that always says ``yes`` gets ``buggy`` 1 and ``fixed`` 0. Read from
        ``Instance.variant``: the instances a summary holds keep only ``summary_data``."""
        def share(variant: str) -> tuple[float | None, int]:
            mine = [s for s in samples if instances[s.instance_id].variant == variant]
            return sum(bool(s.correct) for s in mine) / len(mine) if mine else None, len(mine)

        return BugPredictionSummary(*share("buggy"), *share("fixed"), class_balance(
            samples, lambda s: _TRUTH.get(instances[s.instance_id].variant or "")))


class BugLocalization(_BugTask):
    name = "bug-localization"
    template_names = ("bug-localization",)
    description = "name the line of a buggy function where the bug is, given a failing test"
    needs_sandbox = False

    def build(self, program: Program, call_index: int, trace: Trace,
              ctx: BuildContext) -> list[Recordable]:
        bug, shown = self._common(program, call_index, trace, ctx)
        lines = bug_lines(program.code, bug.code, program.entry_point)
        if not lines:
            raise SkipInstance("the buggy function has the canonical one's lines")
        return [LocalizationQuestion(shown.test, shown.bug, tuple(lines), code=bug.code)]

    def prompt_vars(self, instance: Instance, protocol: Protocol) -> dict[str, Any]:
        example = _example(_EXAMPLE_BUGGY, _EXAMPLE_BUGGY_RUN, "5")
        test = LocalizationQuestion.from_record(instance.data).test
        return self._variables(instance, test, [example], protocol)

    def reference_response(self, instance: Instance) -> str:
        line = LocalizationQuestion.from_record(instance.data).lines[0]
        return f"[ANSWER]\n{line}\n[/ANSWER]"

    def score(self, instance: Instance, response: str | None,
              sandbox: Sandbox | None) -> Score:
        text = answer_text(response)
        found = re.match(r"\s*(?:line\s*)?(\d{1,9})\b", text or "", re.IGNORECASE)
        if found is None:
            return unparsable(text, "expected a line number" if text else EMPTY)
        line = int(found.group(1))
        lines = LocalizationQuestion.from_record(instance.data).lines
        verdict = CORRECT if line in lines else INCORRECT
        return Score(verdict, answer=str(line))


class BugRepair(_BugTask):
    name = "bug-repair"
    template_names = ("bug-repair",)
    description = "rewrite a buggy function so that the problem's tests pass"
    needs_sandbox = True
    runs_model_code = True

    def build(self, program: Program, call_index: int, trace: Trace,
              ctx: BuildContext) -> list[Recordable]:
        bug, shown = self._common(program, call_index, trace, ctx)
        calls = tuple(RepairCall(program.calls[index].args, traced.value, traced.value_repr)
                      for index, traced in ctx.traced if traced.status == "ok"
                      and traced.value is not None and traced.value_repr is not None
                      and is_exact(traced.value))
        return [RepairQuestion(shown.test, shown.bug, calls,
                               function_source(program.code, program.entry_point),
                               code=bug.code)]

    def prompt_vars(self, instance: Instance, protocol: Protocol) -> dict[str, Any]:
        example = _example(_EXAMPLE_BUGGY, _EXAMPLE_BUGGY_RUN,
                           f"```python\n{_EXAMPLE_FIXED}\n```")
        test = RepairQuestion.from_record(instance.data).test
        return self._variables(instance, test, [example], protocol)

    def reference_response(self, instance: Instance) -> str:
        function = RepairQuestion.from_record(instance.data).function
        return f"[ANSWER]\n```python\n{function}```\n[/ANSWER]"

    def score(self, instance: Instance, response: str | None,
              sandbox: Sandbox | None) -> Score:
        from execbench.sandbox.pool import Job, new_unit
        from execbench.sandbox.trace import RESULT_ONLY

        text = answer_text(response)
        if text is None:
            return unparsable(None, EMPTY)
        module, why = _candidate_module(instance.code, text, instance.entry_point)
        if module is None:
            return unparsable(text, why)
        if sandbox is None:
            raise RuntimeError("bug-repair needs a sandbox to score")
        calls = RepairQuestion.from_record(instance.data).calls
        # The candidate's calls share a runner that serves nothing else, and one wall-clock
        # budget: once a call runs out of time the rest are judged timeout, not run.
        unit = new_unit()
        traces = sandbox.map(Job(module, instance.entry_point, call.args, RESULT_ONLY,
                                 unit=unit) for call in calls)
        failures = [_failure(instance.entry_point, call, trace)
                    for call, trace in zip(calls, traces, strict=True)]
        wrong = [failure for failure in failures if failure is not None]
        passed = len(calls) - len(wrong)
        extra: JSONObject = {"passed": passed, "calls": len(calls)}
        if wrong:
            return Score(INCORRECT, answer=text, score=passed / len(calls), extra=extra,
                         detail=f"{len(wrong)} of {len(calls)} test calls fail; first: {wrong[0]}")
        return Score(CORRECT, answer=text, score=1.0, extra=extra)


def _candidate_module(code: str, text: str, entry_point: str) -> tuple[str | None, str]:
    """The module a repair runs as (the buggy module, then the answer), or None and why
    there is none. Only compiled here, never run."""
    try:
        if entry_point not in top_level_names(parse_module(text)):
            return None, f"the answer does not define {entry_point}"
    except RecordError as exc:
        return None, f"the answer's {exc}"
    module = f"{code.rstrip()}\n\n\n{text}\n"
    try:
        parse_module(module)
    except RecordError as exc:  # e.g. a ``from __future__`` import, which must open a file
        return None, f"the answer does not compile after the buggy module: {exc} of the module"
    return module, ""


def _failure(entry_point: str, call: RepairCall, trace: Trace) -> str | None:
    """Why the candidate's run of a test call is wrong, or None when it returned the
    canonical value."""
    where = f"{entry_point}({call.args})"
    if trace.status != "ok":
        what = trace.exception["type"] if trace.exception else trace.detail
        return f"{where}: {trace.status}" + (f" ({what})" if what else "")
    if trace.value is not None and equal(trace.value, call.value):
        return None
    return f"{where} returned {trace.value_repr}, expected {call.repr}"


register(Task.of(BugPrediction()))
register(Task.of(BugLocalization()))
register(Task.of(BugRepair()))
