"""Output prediction and input prediction (the CRUXEval-O / CRUXEval-I shape).

With ``-T values=abstract`` the output task asks for the category of the returned value
instead (CodeSense's abstract values, ``codesense.abstract``); its instances then carry
``values: "abstract"`` and its scores the CodeSense fields. An output CodeSense published
(a recorded trace with the published text) is asked in CodeSense's style too, with its
concrete value: the answer is read from ``<ans>`` tags or our block, ``string_match`` is
recorded, and a value the authors wrote only as text is scored by that string comparison
alone. A Python call whose trace was recorded where it ran may need its project around
it, and an input answer can only be checked by running it: the input task asks about it
only where the function, run alone in the sandbox on the recorded arguments, returns the
recorded value (``_recorded_input``), and skips it otherwise.

``output``: the model sees the program and a call, and completes ``assert f(x) == ??``
with the literal value returned. ``input``: it sees the program and a returned value, and
completes ``assert f(??) == y`` with arguments; the answer is checked by running the
program on those arguments in the sandbox, since many inputs may be right.

A model's answer is only ever read with the literal parser. A dataset call may contain an
argument that is not a literal (CRUXEval has ``lambda x: x < 2``); for the input task the
prompt names such arguments, and an answer is accepted only if it repeats them exactly
(same syntax tree), in which case the dataset's own text is what runs.

An argument the dataset writes as an expression with a literal value (HumanEval's
``candidate(3 * 19)``) is not named that way: the expression is the answer, so naming it
would give the answer away. Such an argument is treated as the literal value the sandbox
traced for it (``stated_args``, what the oracle answers), like any other argument the model
must find. Stating the value keeps the question (dropping the call would lose 16 HumanEval
calls and 8 CRUXEval ones that are fair once stated). The stated call is run again at build
time, and the instance is kept only if it returns the very value the prompt shows: a value
written as a literal can behave otherwise than the expression (``[[]] * 2`` aliases its
items, ``[[], []]`` does not), and the shown output is what an answer is checked against.

A program that reads standard input and prints (``program.STDIN``) is asked in its own
terms (templates ``stdout`` and ``stdin``): ``output`` shows it with the text it reads and
asks what it prints; ``input`` shows what it printed and asks for a text to feed it, which
is run in the sandbox as that program's stdin, never as code. Printed texts are compared
as judges compare them (``program.printed_alike``); a run that prints nothing is not asked.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from execbench.program import (
    LANGUAGES,
    PYTHON,
    STDIN,
    literal_text,
    printed_alike,
    stdin_call,
)
from execbench.tasks.base import (
    CORRECT,
    INCORRECT,
    BuildContext,
    Instance,
    Metric,
    NotApplicable,
    Score,
    SkipInstance,
    build_step_budget,
    pass_at_1,
)
from execbench.tasks.codesense import prompts as codesense_prompts
from execbench.tasks.codesense.facts import InputsFact, OutputFact
from execbench.tasks.codesense.payload import ConcreteTruth, reference_text
from execbench.tasks.codesense.tasks import concrete_truth, score_concrete
from execbench.tasks.common import abstract
from execbench.tasks.common.abstract_payload import SUMMARY_DATA, AbstractTruth
from execbench.tasks.common.answers import (
    EMPTY,
    answer_arguments,
    answer_call,
    given_arguments,
    given_note,
    read_value,
    string_match,
    string_match_metric,
    unparsable,
    value_string_match,
)
from execbench.tasks.common.code import numbered, shown_text
from execbench.tasks.common.extract import answer_text
from execbench.tasks.common.objects import OBJECTS_NOTE, UNSHOWN, holds_objects, unshown
from execbench.tasks.common.restate import stated_as_values
from execbench.tasks.common.returns import no_value
from execbench.tasks.prediction_payload import (
    CodeSenseQuestion,
    InputQuestion,
    OutputQuestion,
    ValueSummary,
    codesense_question,
    in_codesense_style,
)
from execbench.tasks.protocol import REASONING
from execbench.tasks.registry import register
from execbench.tasks.roles import Roles, Task
from execbench.tasks.templating import ENTRY_POINT, GIVEN_NOTE, TemplateVar
from execbench.values import LiteralError, equal, is_exact, to_literal

if TYPE_CHECKING:
    from execbench.json_types import JSONObject, Recordable
    from execbench.kept import Kept
    from execbench.program import Program
    from execbench.sandbox.pool import Sandbox
    from execbench.sandbox.trace import Trace
    from execbench.tasks.common.abstract_payload import KindSummary
    from execbench.tasks.protocol import Protocol
    from execbench.values import Encoded

_EXAMPLE_CODE = """\
def f(words, sep):
    kept = [w.upper() for w in words if len(w) > 2]
    return sep.join(kept)"""
_EXAMPLE_ARGS = "['ox', 'cat', 'bird'], '-'"
_EXAMPLE_OUTPUT = "'CAT-BIRD'"
_EXAMPLE_WORKED = """\
Line 2 keeps the words longer than two letters, upper-cased: 'ox' is dropped, so kept is \
['CAT', 'BIRD']. Line 3 joins them with '-': the call returns 'CAT-BIRD'."""
_EXAMPLE_INPUT_WORKED = """\
The output joins upper-cased words with '-', so sep is '-' and the kept words were 'cat' \
and 'bird' (any case), each longer than two letters; a shorter word such as 'ox' would be \
dropped, so it may be there too."""
"""The fixed example worked out, shown in reasoning style only (the shipped prompt shows
the bare answer)."""


_STDIN_EXAMPLE = """\
n = int(input())
words = input().split()
print(len([w for w in words if len(w) > n]))
print(words[-1].upper())"""
_STDIN_EXAMPLE_INPUT = "2\nox cat bird"
_STDIN_EXAMPLE_OUTPUT = "2\nBIRD"
_STDIN_EXAMPLE_WORKED = """\
Line 1 reads n = 2; line 2 reads the words ['ox', 'cat', 'bird']. Line 3 counts the words \
longer than 2 letters, 'cat' and 'bird', and prints 2. Line 4 prints the last word \
upper-cased: BIRD."""
_STDIN_EXAMPLE_INPUT_WORKED = """\
The first line printed counts the words longer than n, and the second is the last word \
upper-cased, so the last word is 'bird' in any case. With n = 2, 'cat' and 'bird' are the \
two long words, and 'ox' may stay."""


def _stdin_example(protocol: Protocol, worked: str) -> dict[str, str]:
    """The fixed worked example of a stdin program (``stdout`` and ``stdin`` templates)."""
    return {"code": _STDIN_EXAMPLE, "stdin": _STDIN_EXAMPLE_INPUT,
            "output": _STDIN_EXAMPLE_OUTPUT,
            "worked": worked if protocol.style == REASONING else ""}


def _printed(value: Encoded) -> str:
    """What a stdin program's call printed, from the value its question keeps (the output
    question's truth, the input question's output)."""
    assert value[0] == "str", "a stdin program's value is the text it printed"
    return str(value[1])


def _stdin_question(trace: Trace) -> tuple[Encoded, str | None]:
    """What a stdin program's call printed, as output and input questions keep it;
    ``SkipInstance`` when it did not end normally or printed nothing to ask about."""
    value, shown = _require_ok(trace)
    if not str(value[1]).strip():
        raise SkipInstance("the program prints nothing for this input")
    return value, shown


STDIN_VAR = TemplateVar("stdin", "what a program that reads standard input is given (the "
                    "stdout template; None for a function)")


def assertion_response(instance: Instance, value: str) -> str:
    """An answer stating that the instance's call returns ``value`` (a literal text)."""
    call = instance.call
    return f"[ANSWER]\nassert {call} == {value}\n[/ANSWER]"


_OUTPUT_VARS = (*codesense_prompts.TEMPLATE_VARS, ENTRY_POINT, STDIN_VAR)
_INPUT_VARS = (*codesense_prompts.TEMPLATE_VARS, ENTRY_POINT,
               TemplateVar("output", "the value the call returned, as Python prints it "
                           "(empty for published inputs)"),
               GIVEN_NOTE)
"""Both tasks ask some instances in CodeSense's style (published records), so they give
the ``codesense`` template's variables too; empty where an instance has none."""


def _published(trace: Trace, language: str) -> CodeSenseQuestion:
    """An output a benchmark published with its text (CodeSense: ``extra["text"]``), asked
    in their style: a value they wrote only as text is kept, scored by their string
    comparison (``concrete_truth``; in C and Java the debugger's text is that text). Calls
    recorded by ``harvest`` carry values of our own tracer, asked as any other call."""
    truth = None
    if trace.status == "ok" and trace.value is not None:
        record: JSONObject = {} if language == PYTHON else {"text": trace.extra["text"]}
        truth = concrete_truth(OutputFact(record, language), trace.value, published=True)
    if truth is None:
        raise SkipInstance(no_value(trace) or "the recorded output has no literal form")
    return CodeSenseQuestion("output", replace(truth, repr=trace.value_repr))


def _require_ok(trace: Trace) -> tuple[Encoded, str | None]:
    """The value the call returned and its repr (None from a recorded trace without one);
    ``SkipInstance`` when there is no value to ask about."""
    reason = no_value(trace)
    if reason is not None or trace.value is None:
        raise SkipInstance(reason or "the call returned no value")
    return trace.value, trace.value_repr


def _value_summary(samples: list[Kept]) -> ValueSummary:
    """Strict and string-match accuracy over all samples and per source (a failed request
    counts against both)."""
    sources: dict[str, list[Kept]] = {}
    for sample in samples:
        sources.setdefault(sample.source, []).append(sample)
    return ValueSummary(abstract.share(samples),
                        {name: abstract.share(group) for name, group in sorted(sources.items())})


def _codesense_summary(samples: list[Kept], instances: dict[str, Instance]
                       ) -> KindSummary | None:
    """For questions in CodeSense's style, the CodeSense tasks' summary (strict and
    string-match accuracy); None otherwise, so that other runs' results keep their shape."""
    if not any(in_codesense_style(instances[s.instance_id]) for s in samples):
        return None
    return abstract.summarize_by_kind(samples, instances)


class OutputPrediction(Roles):
    name = "output"
    description = "predict the value a call returns (CRUXEval-O style)"
    needs_sandbox = False
    family = "prediction"
    options = (abstract.VALUES,)
    restated = (("repr", "value"), ("text", "value"))
    summary_data: tuple[str, ...] = SUMMARY_DATA
    template_names = ("output", "codesense", "stdout")
    template_vars = _OUTPUT_VARS
    reads_stdin = True

    def build(self, program: Program, call_index: int, trace: Trace,
              ctx: BuildContext) -> list[Recordable]:
        if program.entry_point == STDIN:
            if abstract.VALUES.value(ctx) != "concrete":
                raise NotApplicable("a program that reads standard input prints text, which "
                                    "has no abstract categories")
            return [OutputQuestion(*_stdin_question(trace), False)]
        concrete = abstract.VALUES.value(ctx) == "concrete"
        recorded = program.calls[call_index].recorded is not None
        if recorded and trace.value is None and trace.extra.get("facts"):
            raise NotApplicable("the published record asks about a statement, branch or "
                                "loop, not the value the call returns")
        if concrete and recorded and "text" in trace.extra:
            return [_published(trace, program.language)]
        if program.language != PYTHON:
            raise NotApplicable(f"a {LANGUAGES[program.language]} output is asked only with "
                                "the published value")
        value, shown = _require_ok(trace)
        if unshown(value, trace):
            raise SkipInstance(UNSHOWN)
        if concrete:
            return [OutputQuestion(value, shown, holds_objects(trace))]
        category = abstract.truth(value)
        if category is None:
            raise SkipInstance(f"the return value's type ({value[0]}) has no abstract "
                               "categories")
        truth = replace(category, value=value, repr=shown)
        return [CodeSenseQuestion("output", truth)]

    def template_of(self, instance: Instance) -> str:
        if instance.entry_point == STDIN:
            return "stdout"
        return self.template_names[codesense_question(instance) is not None]

    def prompt_vars(self, instance: Instance, protocol: Protocol) -> dict[str, Any]:
        """The ``output`` template's variables, and, since a suite may ask some outputs
        in CodeSense's style (``template_of``), the ``codesense`` template's too, so that
        one template of the user's can ask every instance; a stdin program's, the
        ``stdout`` template's."""
        if instance.entry_point == STDIN:
            return {"stdin": shown_text(literal_text(instance.args)),
                    "examples": [_stdin_example(protocol, _STDIN_EXAMPLE_WORKED)]
                    [:protocol.shots]}
        asked = codesense_question(instance)
        fact = OutputFact({}, instance.language)
        values = "concrete" if asked is None else asked.values
        objects = asked is None and OutputQuestion.from_record(instance.data).objects
        shown = codesense_prompts.variables(fact, values, protocol, instance.code,
                                            instance.call, objects=objects)
        if asked is None:
            shown["examples"] = [
                {"code": _EXAMPLE_CODE, "call": f"f({_EXAMPLE_ARGS})",
                 "worked": _EXAMPLE_WORKED if protocol.style == REASONING else "",
                 "answer": f"[ANSWER]\nassert f({_EXAMPLE_ARGS}) == {_EXAMPLE_OUTPUT}\n"
                           "[/ANSWER]"}][:protocol.shots]
        return {**shown, "entry_point": instance.entry_point, "stdin": None}

    def metrics(self) -> tuple[Metric, ...]:
        return (pass_at_1(self.name), string_match_metric(self.name, "all"))

    def summarize(self, samples: list[Kept],
                  instances: dict[str, Instance]) -> KindSummary | ValueSummary:
        """CodeSense's summary where some questions were asked in its style, else the
        strict and string-match shares over all samples and per source; both hold the
        string-match share at ``all.string_match``."""
        return _codesense_summary(samples, instances) or _value_summary(samples)

    def reference_response(self, instance: Instance) -> str:
        if instance.entry_point == STDIN:
            printed = _printed(OutputQuestion.from_record(instance.data).value)
            return f"[ANSWER]\n{printed}\n[/ANSWER]"
        if (asked := codesense_question(instance)) is not None:
            return f"[ANSWER]\n{reference_text(asked.truth)}\n[/ANSWER]"
        return assertion_response(instance, OutputQuestion.from_record(instance.data).shown)

    def score(self, instance: Instance, response: str | None,
              sandbox: Sandbox | None) -> Score:
        if instance.entry_point == STDIN:
            return _score_printed(instance, answer_text(response))
        if (asked := codesense_question(instance)) is not None:
            extra = abstract.asked(instance, "output", asked.values)
            if isinstance(asked.truth, AbstractTruth):
                return abstract.score(response, asked.truth, extra)
            return score_concrete(OutputFact({}, instance.language), asked.truth, response,
                                  extra)
        question = OutputQuestion.from_record(instance.data)
        text = answer_text(response)
        matched: JSONObject = {"string_match": value_string_match(text, question.shown)}
        try:
            value = read_value(text)
        except LiteralError as exc:
            return unparsable(text, str(exc), matched)
        if not is_exact(value):  # past the encoder's caps: no literal to compare or show
            return unparsable(text, "the answer's value is too large to read in full",
                              matched)
        verdict = CORRECT if equal(value, question.value) else INCORRECT
        return Score(verdict, answer=to_literal(value), extra=matched)


class InputPrediction(Roles):
    name = "input"
    description = "predict arguments that make a call return a given value (CRUXEval-I style)"
    needs_sandbox = True
    family = "prediction"
    restated = (("output_repr", "output"), ("text", "value"))
    summary_data: tuple[str, ...] = SUMMARY_DATA
    template_names = ("input", "codesense", "stdin")
    template_vars = _INPUT_VARS
    reads_stdin = True

    def build(self, program: Program, call_index: int, trace: Trace,
              ctx: BuildContext) -> list[Recordable]:
        if program.entry_point == STDIN:
            value, shown = _stdin_question(trace)
            return [InputQuestion(value, shown, ())]
        if program.language != PYTHON:
            return [_published_inputs(program, trace)]
        if program.calls[call_index].recorded is not None:
            return [_recorded_input(program, call_index, trace, ctx)]
        value, shown = _require_ok(trace)
        args = program.calls[call_index].args
        stated = stated_as_values(args, trace)
        if stated is None:
            return [InputQuestion(value, shown, given_arguments(args))]
        rerun = _run_stated(program, stated, ctx)
        if rerun.status != "ok" or rerun.value is None or not equal(rerun.value, value):
            got = rerun.value_repr if rerun.status == "ok" else rerun.status
            raise SkipInstance("the call's arguments written as literal values do not return "
                               f"what the dataset's expressions return ({got})")
        return [InputQuestion(value, shown, given_arguments(stated), stated)]

    def template_of(self, instance: Instance) -> str:
        if instance.entry_point == STDIN:
            return "stdin"
        return self.template_names[codesense_question(instance) is not None]

    def prompt_vars(self, instance: Instance, protocol: Protocol) -> dict[str, Any]:
        """The ``input`` template's variables, or for published inputs (asked in
        CodeSense's style, ``template_of``) the ``codesense`` template's; for a stdin
        program, the ``stdin`` template's."""
        if instance.entry_point == STDIN:
            printed = _printed(InputQuestion.from_record(instance.data).output)
            return {"output": shown_text(printed),
                    "examples": [_stdin_example(protocol, _STDIN_EXAMPLE_INPUT_WORKED)]
                    [:protocol.shots]}
        if (asked := codesense_question(instance)) is not None:
            shown = codesense_prompts.variables(_inputs_fact(asked), "concrete", protocol,
                                                instance.code, instance.call)
            return {**shown, "entry_point": instance.entry_point, "output": "",
                    "given_note": ""}
        question = InputQuestion.from_record(instance.data)
        unused = {name: "" for name in ("introduction", "answer_format", "question")}
        example = {"code": _EXAMPLE_CODE, "entry_point": "f", "output": _EXAMPLE_OUTPUT,
                   "worked": _EXAMPLE_INPUT_WORKED if protocol.style == REASONING else "",
                   "answer": f"[ANSWER]\nassert f({_EXAMPLE_ARGS}) == "
                                          f"{_EXAMPLE_OUTPUT}\n[/ANSWER]"}
        return {**unused, "numbered_code": numbered(instance.code), "code_tag": "PYTHON",
                "objects": False, "objects_note": OBJECTS_NOTE,
                "entry_point": instance.entry_point, "call": instance.call,
                "output": question.output_shown, "given_note": given_note(question.given),
                "examples": [example][:protocol.shots]}

    def summarize(self, samples: list[Kept],
                  instances: dict[str, Instance]) -> KindSummary | None:
        return _codesense_summary(samples, instances)

    def show_truth(self, truth: Any) -> str:
        """What the call must give, and that any input that gives it is right: the truth
        is the output, not the dataset's input (a published input is shown as stored)."""
        if isinstance(truth, dict) and set(truth) == {"output", "output_repr"}:
            shown = super().show_truth(truth).partition(": ")[2]
            return f"any input that gives {shown}"
        return super().show_truth(truth)

    def worked_call(self, instance: Instance) -> tuple[str, str, str]:
        """The run on the arguments ``reference_response`` states."""
        question = InputQuestion.from_record(instance.data)
        args = instance.args if question.stated_args is None else question.stated_args
        return instance.code, instance.entry_point, args

    def reference_response(self, instance: Instance) -> str:
        """The dataset's call, with arguments written as expressions stated as their values
        (the text the answer parser reads); for published inputs, those inputs."""
        if instance.entry_point == STDIN:
            return f"[ANSWER]\n{literal_text(instance.args)}\n[/ANSWER]"
        if (asked := codesense_question(instance)) is not None:
            return f"[ANSWER]\n{reference_text(asked.truth)}\n[/ANSWER]"
        question = InputQuestion.from_record(instance.data)
        args = instance.args if question.stated_args is None else question.stated_args
        call = f"{instance.entry_point}({args})"
        return f"[ANSWER]\nassert {call} == {question.output_shown}\n[/ANSWER]"

    def score(self, instance: Instance, response: str | None,
              sandbox: Sandbox | None) -> Score:
        if (asked := codesense_question(instance)) is not None:
            assert isinstance(asked.truth, ConcreteTruth), "published inputs are values"
            return score_concrete(_inputs_fact(asked), asked.truth, response,
                                  abstract.asked(instance, "input", "concrete"))
        text = answer_text(response)
        if text is None:
            return unparsable(None, EMPTY)
        if instance.entry_point == STDIN:  # the text is the program's input, never code
            return run_and_compare(instance, stdin_call(text + "\n"), sandbox)
        call = answer_call(text, instance.entry_point)
        if call is None:
            return unparsable(text, f"no call of {instance.entry_point} or argument list found")
        try:
            question = InputQuestion.from_record(instance.data)
            args = answer_arguments(call, instance.args, question.given)
        except LiteralError as exc:
            return unparsable(text, str(exc))
        score = run_and_compare(instance, args, sandbox)
        if instance.recorded:  # CodeSense compares an input with the recorded one as text
            return replace(score, extra={**score.extra,
                                         "string_match": string_match(args, instance.args)})
        return score


def _published_inputs(program: Program, trace: Trace) -> CodeSenseQuestion:
    """The instance of a call in a language that is never run: its published inputs
    (``extra["inputs"]``) asked from its output, checked against those inputs only."""
    inputs = trace.extra.get("inputs")
    if not isinstance(inputs, dict) or not inputs:
        raise NotApplicable(f"a {LANGUAGES[program.language]} program is never run, and its "
                            "record publishes no inputs that are all values (none, or an "
                            "object reference among them) to compare an answer with")
    fact = InputsFact({"names": list(inputs), "output": str(trace.extra.get("text", ""))},
                      program.language)
    value = ["dict", [[["str", name], item] for name, item in inputs.items()]]
    truth = concrete_truth(fact, value)
    assert truth is not None, "the published inputs are exact values"
    return CodeSenseQuestion("input", truth, fact)


_PROJECT_ERRORS = frozenset({"NameError", "ImportError", "ModuleNotFoundError"})
"""What a function cut out of its project raises when run alone: a name or module the
project gave it."""


def _recorded_input(program: Program, call_index: int, trace: Trace,
                    ctx: BuildContext) -> InputQuestion:
    """The input question of a Python call recorded where it ran (a published CodeSense
    record, a harvest), asked only where its function runs alone: an answer is checked by
    running it, so the recorded call itself is run here, in the sandbox, and must return
    the recorded value. A function that needs its project (an import, a global, a file)
    fails that check and is skipped, the reason naming what stopped it."""
    if trace.value is None and trace.extra.get("facts"):
        raise NotApplicable("the published record asks about a statement, branch or loop, "
                            "not a call's inputs")
    value, shown = _require_ok(trace)
    args = program.calls[call_index].args
    rerun = _run_stated(program, args, ctx)
    if rerun.status != "ok":
        if rerun.exception is None:
            raise SkipInstance(f"the recorded call, run alone, ends in {rerun.status}")
        raised = rerun.exception["type"]
        raise SkipInstance(f"the recorded call needs its project: run alone, it raises "
                           f"{raised}" if raised in _PROJECT_ERRORS else
                           f"the recorded call, run alone, raises {raised}")
    if rerun.value is None or not equal(rerun.value, value):
        raise SkipInstance("the recorded call, run alone, does not return the recorded "
                           "value")
    return InputQuestion(value, shown, given_arguments(args))


def _inputs_fact(asked: CodeSenseQuestion) -> InputsFact:
    assert asked.fact is not None, "a published input question states its fact"
    return asked.fact


def _run_stated(program: Program, args: str, ctx: BuildContext) -> Trace:
    """The program run on ``args`` under the build's step budget, as an answer would be."""
    from execbench.sandbox.pool import Job
    from execbench.sandbox.trace import RESULT_ONLY

    return ctx.sandbox.run(Job(program.code, program.entry_point, args, RESULT_ONLY,
                               max_steps=build_step_budget(ctx.sandbox)))


def run_and_compare(instance: Instance, args: str, sandbox: Sandbox | None) -> Score:
    """Run the program on ``args`` in the sandbox and compare with the expected output."""
    from execbench.sandbox.pool import Job, new_unit
    from execbench.sandbox.trace import RESULT_ONLY

    if sandbox is None:
        raise RuntimeError("the input task needs a sandbox to score")
    trace = sandbox.run(Job(instance.code, instance.entry_point, args, RESULT_ONLY,
                           unit=new_unit()))
    if trace.status != "ok":
        what = trace.exception["type"] if trace.exception else trace.detail
        return Score(INCORRECT, answer=args, detail=f"program {trace.status}: {what}")
    expected = InputQuestion.from_record(instance.data).output
    if instance.entry_point == STDIN:
        printed = trace.value is not None and printed_alike(str(trace.value[1]),
                                                            str(expected[1]))
        return Score(CORRECT if printed else INCORRECT, answer=args,
                     detail=None if printed else f"printed {trace.value_repr}")
    if trace.value is not None and equal(trace.value, expected):
        return Score(CORRECT, answer=args)
    return Score(INCORRECT, answer=args, detail=f"returned {trace.value_repr}")


def _score_printed(instance: Instance, text: str | None) -> Score:
    """An output answer about a stdin program: the printed text it states, compared as
    judges compare (``printed_alike``); string match is the same comparison."""
    if text is None:
        return unparsable(None, EMPTY, {"string_match": False})
    alike = printed_alike(text, _printed(OutputQuestion.from_record(instance.data).value))
    return Score(CORRECT if alike else INCORRECT, answer=text,
                 extra={"string_match": alike})


register(Task.of(OutputPrediction()))
register(Task.of(InputPrediction()))
