"""Dual-path reasoning (DexBench): forward coverage prediction and backward input mutation.

Both tasks use the same (program, call) so that they pair into the dual score:

* selection: a program qualifies when it has an ``if``/``for``/``while`` statement and a
  call that returns normally while leaving some statement of its functions unexecuted;
  one qualifying call per program is chosen with the suite seed, as the paper says
  (``-T test=first`` takes the first, as the authors' released code does);
* ``coverage``: given the numbered program and the call, list the executed lines. Ground
  truth is our tracer's line set for running the module and then the call, with each line
  of a multi-line statement mapped to its first line. Strict verdict: exact set; relaxed
  score: Jaccard similarity;
* ``counterfactual``: given the program, the call and a target line, propose new arguments
  under which the target's body runs (a standalone target: the line itself runs). The
  target follows the paper's Algorithm 1 (``-T target=max``): the largest branch whose body
  is entirely unexecuted, ties by source order; otherwise the first unexecuted line outside
  every branch body; ``min`` takes the smallest such body, ``random`` a seeded choice. An
  ``if``'s body includes its ``elif``/``else`` arms (``-T body=chain``, how the authors'
  released code reads it; ``-T body=arm`` takes each arm alone).
  ``-T mode=generate`` hides the original call. An instance is kept only when the source's
  other calls or a mutation search (``witness``) find an input that reaches the target;
  that input is what ``reference/oracle`` answers. ``-T unwitnessed=keep`` keeps the
  targets no input was found for too, as the paper does: an answer is judged by running
  it, as always, and the oracle abstains on them (an error in its run); the build states
  how many (``task_counts.counterfactual.unwitnessed``).

Each failure is labelled, where a rule can decide it, with the paper's error taxonomy:
``null_response``, ``format_error``, ``hallucination`` (a predicted line is not an
executable line), ``skipping_statements`` (an executed basic block reported only in
part), ``prompt_misread`` (the target's deciding line ran but its body did not).
"""

from __future__ import annotations

import ast
import json
import random
from typing import TYPE_CHECKING, Any

from execbench.analysis.cfg import entry_exit_paths, function_graphs
from execbench.analysis.shape import Shape, shape_of
from execbench.program import STDIN, literal_text
from execbench.tasks.base import (
    CORRECT,
    INCORRECT,
    BuildContext,
    Instance,
    Metric,
    NotApplicable,
    Pairing,
    Place,
    Score,
    SkipInstance,
    TaskOption,
    pass_at_1,
)
from execbench.tasks.common.answers import (
    EMPTY,
    Given,
    answer_arguments,
    answer_call,
    fits_signature,
    given_arguments,
    given_note,
    json_value,
    signature_of,
    unparsable,
)
from execbench.tasks.common.code import numbered, shown_text
from execbench.tasks.common.extract import answer_text
from execbench.tasks.dexbench_payload import (
    Complexity,
    CounterfactualQuestion,
    CoverageQuestion,
    Target,
)
from execbench.tasks.protocol import REASONING
from execbench.tasks.registry import register
from execbench.tasks.roles import Roles, Task
from execbench.tasks.templating import (
    CALL,
    ENTRY_POINT,
    GIVEN_NOTE,
    NUMBERED_CODE,
    TemplateVar,
)
from execbench.tasks.witness import find_witness
from execbench.values import LiteralError, distinct

if TYPE_CHECKING:
    from execbench.json_types import JSONObject, Recordable
    from execbench.program import Program
    from execbench.sandbox.pool import Sandbox
    from execbench.sandbox.trace import Trace
    from execbench.tasks.protocol import Protocol

TARGET = TaskOption("target", ("max", "min", "random"),
                    "which unexecuted branch body is the target: the largest, the smallest, "
                    "or a seeded choice")
BODY = TaskOption("body", ("chain", "arm"),
                  "what an `if`'s body is when the target is chosen: chain = with its "
                  "`elif`/`else` arms, as DexBench's released code reads it (the published "
                  "instances; the paper does not say); arm = its own block, each arm a "
                  "target of its own")
TEST = TaskOption("test", ("random", "first"),
                  "which call that leaves code unexecuted both DexBench tasks pose: a seeded "
                  "choice (the paper) or the first in the source's order (DexBench's "
                  "released code)")
MAX_OPTIONS = 6
"""The most executed-line sets ``-T options=listed`` offers."""
OPTIONS = TaskOption("options", ("free", "listed"),
                     "free: the model names the executed lines; listed: the prompt offers "
                     f"up to {MAX_OPTIONS} executed-line sets to choose from, the truth among "
                     "them (an approximation of DexBench's structured-prompt variant, after "
                     "CRISPE's feasible coverage options)")
MODE = TaskOption("mode", ("mutate", "generate"),
                  "mutate shows the original call to change; generate hides it")
UNWITNESSED = TaskOption("unwitnessed", ("drop", "keep"),
                         "a target no input was found to reach: drop it, or keep it as "
                         "DexBench does (answers are still judged by running them; "
                         "reference/oracle abstains on it)")

_EXAMPLE = """\
def g(n):
    total = 0
    for i in range(n):
        if i % 2:
            total += i
    return total"""


_COVERAGE_WORKED = """\
Line 1 defines g when the module runs. The call runs line 2 (total = 0), then the loop on \
line 3 for i = 0 and i = 1. Line 4 tests i % 2: 0 for i = 0, so line 5 is skipped; 1 for \
i = 1, so line 5 runs (total = 1). Line 6 returns 1. Lines 1 to 6 all run."""
_COUNTERFACTUAL_WORKED = """\
With n = 1 the loop on line 3 runs once, for i = 0, and 0 % 2 is 0: the body of the `if` \
never runs. With n = 2 it runs for i = 1 too, and 1 % 2 is 1: line 5 runs."""
"""The fixed examples worked out, shown in reasoning style only (the shipped prompt shows
the bare answer)."""


class _DualSelection(Roles):
    """The call choice both tasks share, so their instances pair up."""

    family = "dexbench"
    layout = "dexbench"
    options: tuple[TaskOption, ...] = (TEST,)

    def choose_calls(self, program: Program, traced: list[tuple[int, Trace]],
                     ctx: BuildContext) -> list[int]:
        if all(program.calls[index].recorded is not None for index, _ in traced):
            raise NotApplicable("the program's calls were recorded where they ran, and its "
                                "code may not run alone: lines and inputs cannot be checked")
        shape = shape_of(program.code)
        if not shape.has_control_flow:
            raise NotApplicable("the function has no branch or loop: every call runs the "
                                "same lines")
        # a program that reads standard input runs at module level: all its lines count
        region = shape.executable if program.entry_point == STDIN else shape.function_lines
        qualifying = [index for index, trace in traced if trace.status == "ok"
                      and region - shape.normalise(trace.lines)]
        if not qualifying:
            raise NotApplicable("every call that returned ran every line of the function: "
                                "no line is left for a counterfactual")
        if TEST.value(ctx) == "first":
            return qualifying[:1]
        return [random.Random(f"{ctx.seed}/{program.id}/dual").choice(qualifying)]


class CoveragePrediction(_DualSelection):
    name = "coverage"
    options: tuple[TaskOption, ...] = (TEST, OPTIONS)
    template_names = ("coverage",)
    template_vars = (NUMBERED_CODE, CALL,
                     TemplateVar("stdin", "the text a program that reads standard input is "
                                 "given (None for a function, whose call `call` shows)"),
                     TemplateVar("options", "with -T options=listed, the executed-line sets "
                                 "offered to choose from (each a list of line numbers); "
                                 "else empty"))
    description = "list the lines a call executes (DexBench forward reasoning)"
    needs_sandbox = False
    reads_stdin = True

    def metrics(self) -> tuple[Metric, ...]:
        return (pass_at_1(self.name, description="R_exec: executed lines exactly right"),
                Metric("relaxed", Place.group(self.name, "score"), headline=True,
                       description="mean Jaccard similarity of predicted and executed lines"))

    def build(self, program: Program, call_index: int, trace: Trace,
              ctx: BuildContext) -> list[Recordable]:
        shape = shape_of(program.code)
        blocks = sorted(tuple(sorted(b)) for b in shape.blocks)
        lines = tuple(sorted(shape.normalise(trace.lines)))
        options: tuple[tuple[int, ...], ...] = ()
        if OPTIONS.value(ctx) == "listed":
            rng = random.Random(f"{ctx.seed}/{program.id}/{call_index}/options")
            options = coverage_options(program.code, program.entry_point, lines, rng)
        return [CoverageQuestion(lines, tuple(sorted(shape.executable)), tuple(blocks),
                                 Complexity.of(shape), options)]

    def prompt_vars(self, instance: Instance, protocol: Protocol) -> dict[str, Any]:
        example = {"code": _EXAMPLE, "numbered_code": numbered(_EXAMPLE), "call": "g(2)",
                   "worked": _COVERAGE_WORKED if protocol.style == REASONING else "",
                   "answer": "[ANSWER]\n" + json.dumps(
                       {"executed_lines": [1, 2, 3, 4, 5, 6]}) + "\n[/ANSWER]"}
        options = CoverageQuestion.from_record(instance.data).options
        script = instance.entry_point == STDIN
        return {"numbered_code": numbered(instance.code), "call": instance.call,
                "stdin": shown_text(literal_text(instance.args)) if script else None,
                "options": [list(option) for option in options],
                "examples": [example][:protocol.shots]}

    def reference_response(self, instance: Instance) -> str:
        lines = CoverageQuestion.from_record(instance.data).lines
        answer = json.dumps({"executed_lines": list(lines)})
        return f"[ANSWER]\n{answer}\n[/ANSWER]"

    def score(self, instance: Instance, response: str | None,
              sandbox: Sandbox | None) -> Score:
        text = answer_text(response)
        if text is None:
            return unparsable(None, EMPTY, {"failure": "null_response"}, score=0.0)
        try:
            predicted = parse_lines(text)
        except LiteralError as exc:
            return unparsable(text, str(exc), {"failure": "format_error"}, score=0.0)
        if predicted is None:
            return unparsable(text, "not a JSON list of line numbers",
                              {"failure": "format_error"}, score=0.0)
        question = CoverageQuestion.from_record(instance.data)
        truth = set(question.lines)
        union = predicted | truth
        jaccard = len(predicted & truth) / len(union) if union else 1.0
        answer = json.dumps(sorted(predicted))
        if predicted == truth:
            return Score(CORRECT, answer=answer, score=1.0)
        failure = _coverage_failure(predicted, truth, question)
        return Score(INCORRECT, answer=answer, score=jaccard,
                     extra={"failure": failure} if failure else {})


def coverage_options(code: str, entry_point: str, truth: tuple[int, ...],
                     rng: random.Random) -> tuple[tuple[int, ...], ...]:
    """Up to ``MAX_OPTIONS`` executed-line sets a call could have, the truth among them,
    in ascending order so that its place says nothing: one per way through the entry
    point's branches (``cfg.entry_exit_paths``) and, since a loop may take other branches
    on later turns, the unions of two, each with the lines outside the function that the
    call ran (the module's, those of functions it called). The set of every line of the
    function is never offered: the task asks only about calls that leave some line
    unexecuted, so it would be a give-away wrong option. Where fewer than two other sets
    are left, the truth with one basic block added or taken away joins them. An
    approximation of DexBench's feasible options: a union of two paths, or a near miss,
    may be one no input takes."""
    tree = ast.parse(code)
    lines = [node.lineno for node in tree.body if isinstance(
        node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry_point]
    graph = function_graphs(code).get(max(lines)) if lines else None
    if graph is None:
        return (truth,)
    whole = frozenset(graph.succ)
    outside = frozenset(truth) - whole
    paths = {frozenset(path) for path in entry_exit_paths(graph)}
    candidates = paths | {a | b for a in paths for b in paths if a != b}
    others = sorted({tuple(sorted(outside | c)) for c in candidates
                     if outside | c != frozenset(truth) and c != whole})
    if len(others) < 2:  # too few ways through: the truth with a block more or fewer
        blocks = [frozenset(b) & whole for b in shape_of(code).blocks if frozenset(b) & whole]
        near = {frozenset(truth) ^ block for block in blocks}
        others = sorted({*others, *(tuple(sorted(c)) for c in near
                                    if c and c != frozenset(truth) and c | outside != whole
                                    | outside)})
    chosen = rng.sample(others, min(MAX_OPTIONS - 1, len(others)))
    return tuple(sorted([truth, *chosen]))


def parse_lines(text: str) -> set[int] | None:
    """Line numbers from ``{"executed_lines": [...]}`` or a bare list; None if malformed.
    The set is built by ``values.distinct``: ints are hashed by their value modulo
    2**61 - 1, so a list of multiples of it would otherwise take quadratic time
    (``LiteralError`` then)."""
    value = json_value(text)
    if isinstance(value, dict):
        value = value.get("executed_lines")
    if not isinstance(value, list | tuple) or not all(type(v) is int for v in value):
        return None
    return distinct(value)


def _coverage_failure(predicted: set[int], truth: set[int],
                      question: CoverageQuestion) -> str | None:
    if predicted - set(question.executable):
        return "hallucination"
    for lines in question.blocks:
        block = set(lines)
        if block <= truth and predicted & block and not block <= predicted:
            return "skipping_statements"
    return None


def choose_target(shape: Shape, covered: set[int], rule: str, rng: random.Random,
                  body: str = "chain") -> Target | None:
    """Algorithm 1 (with the ``min``/``random`` variants of the target rule).

    The paper says a branch's body without saying whether an ``if``'s ``elif``/``else``
    arms belong to it. Its released code, which made the published instances, reads them
    as part of it (``body="chain"``): an ``if``/``elif`` is a candidate when it and every
    arm after it are unexecuted, measured by all their lines, an ``else`` is no candidate
    of its own, and where no branch and no line outside them is left, the first
    unexecuted line is the target, as there. ``body="arm"`` takes each arm alone
    (``else`` included) and names no target then, as the paper's Algorithm 1 does."""
    unexecuted = shape.executable - covered
    if body == "chain":
        branches = [(b, b.chain) for b in shape.branches if b.kind != "else"]
    else:
        branches = [(b, b.body) for b in shape.branches]
    candidates = [(b, lines) for b, lines in branches if lines and lines <= unexecuted]
    if candidates:
        if rule == "random":
            branch, lines = rng.choice(candidates)
        else:
            size = (max if rule == "max" else min)(len(lines) for _, lines in candidates)
            branch, lines = next((b, lines) for b, lines in candidates if len(lines) == size)
        return Target(branch.line, branch.kind, tuple(sorted(lines)), branch.decision,
                      arms=lines != branch.body)
    standalone = shape.outside_branches & unexecuted
    if body == "chain" and not standalone:
        # An `else` is no target of its own here, so the released code's last resort keeps
        # an unexecuted arm reachable: the first unexecuted line, wherever it lies.
        standalone = unexecuted
    if standalone:
        line = min(standalone)
        return Target(line, "line", (line,), None)
    return None


class CounterfactualMutation(_DualSelection):
    name = "counterfactual"
    description = "change a call's arguments so an unexecuted branch runs (DexBench backward)"
    needs_sandbox = True
    pairings = (Pairing("dual", "coverage", "counterfactual"),)
    options = (TEST, TARGET, BODY, MODE, UNWITNESSED)
    template_names = ("counterfactual",)
    template_vars = (
        NUMBERED_CODE, ENTRY_POINT,
        TemplateVar("args", "the call's arguments, as the source gives them"),
        TemplateVar("mode", "'mutate' (change the shown call's arguments) or 'generate' "
                    "(find arguments, no call shown): -T mode"),
        TemplateVar("goal", "what must happen, e.g. 'the body of the `if` at line 4 runs'"),
        TemplateVar("not_yet", "what the shown call does not do, e.g. 'the body of the "
                    "`if` at line 4 does not run'"),
        GIVEN_NOTE)

    def metrics(self) -> tuple[Metric, ...]:
        return (pass_at_1(self.name, description="R_cf: the target branch runs"),
                Metric("R_dual pass@1", Place.paired("dual", "pass@1"),
                       headline=True, description="coverage and counterfactual both right "
                       "on a call (product of per-call pass@1)"))

    def build(self, program: Program, call_index: int, trace: Trace,
              ctx: BuildContext) -> list[Recordable]:
        rule, mode = TARGET.value(ctx), MODE.value(ctx)
        shape = shape_of(program.code)
        covered = shape.normalise(trace.lines)
        target = choose_target(shape, covered, rule,
                               random.Random(f"{ctx.seed}/{program.id}/target"),
                               BODY.value(ctx))
        if target is None:
            raise SkipInstance("no counterfactual target: every unexecuted line is in a "
                               "branch whose body partly ran")
        args = program.calls[call_index].args
        given = given_arguments(args)
        others = [(program.calls[i].args, t) for i, t in ctx.traced if i != call_index]
        # The witness is what reference/oracle answers: only an answer score() reads counts.
        witness = find_witness(
            ctx.sandbox, program.code, program.entry_point, shape, frozenset(target.body),
            args, trace, others,
            lambda text: isinstance(_arguments(text, program.code, program.entry_point, args,
                                               given), str))
        if witness is None and UNWITNESSED.value(ctx) == "drop":
            raise SkipInstance(f"no input reaching line {target.line} that can be written "
                               "as literal arguments was found")
        return [CounterfactualQuestion(target, witness, tuple(sorted(covered)), given, mode,
                                       rule, Complexity.of(shape))]

    def prompt_vars(self, instance: Instance, protocol: Protocol) -> dict[str, Any]:
        question = CounterfactualQuestion.from_record(instance.data)
        body = "the body of the `if` at line 4"
        example = {"code": _EXAMPLE, "numbered_code": numbered(_EXAMPLE),
                   "worked": _COUNTERFACTUAL_WORKED if protocol.style == REASONING else "",
                   "mode": "mutate", "entry_point": "g", "args": "1",
                   "goal": f"{body} runs", "not_yet": f"{body} does not run",
                   "given_note": "", "answer": "[ANSWER]\n2\n[/ANSWER]"}
        return {"numbered_code": numbered(instance.code), "entry_point": instance.entry_point,
                "args": instance.args, "mode": question.mode,
                "goal": _goal(question.target), "not_yet": _not_yet(question.target),
                "given_note": given_note(question.given),
                "examples": [example][:protocol.shots]}

    def worked_call(self, instance: Instance) -> tuple[str, str, str]:
        """The run on the witness, the arguments ``reference_response`` answers."""
        return instance.code, instance.entry_point, _witness(instance)

    def reference_response(self, instance: Instance) -> str:
        return f"[ANSWER]\n{_witness(instance)}\n[/ANSWER]"

    def abstains(self, instance: Instance) -> str | None:
        if CounterfactualQuestion.from_record(instance.data).witness is None:
            return "no input reaching the target was found when the suite was built"
        return None

    def suite_counts(self, instances: list[Instance]) -> dict[str, int] | None:
        """How many targets have no witness (kept by ``-T unwitnessed=keep``); None where
        none has, so that a default build's manifest keeps its bytes."""
        unwitnessed = sum(CounterfactualQuestion.from_record(i.data).witness is None
                          for i in instances)
        return {"unwitnessed": unwitnessed} if unwitnessed else None

    def score(self, instance: Instance, response: str | None,
              sandbox: Sandbox | None) -> Score:
        from execbench.sandbox.pool import Job, new_unit
        from execbench.sandbox.trace import RESULT_ONLY

        text = answer_text(response)
        if text is None:
            return unparsable(None, EMPTY, {"failure": "null_response"})
        args = read_arguments(text, instance)
        if isinstance(args, Score):
            return args
        if sandbox is None:
            raise RuntimeError("the counterfactual task needs a sandbox to score")
        trace = sandbox.run(Job(instance.code, instance.entry_point, args, RESULT_ONLY,
                               unit=new_unit()))
        shape = shape_of(instance.code)
        lines = shape.normalise(trace.lines)
        target = CounterfactualQuestion.from_record(instance.data).target
        extra: JSONObject = {}
        if trace.status == "exception" and trace.exception:
            extra["raised"] = trace.exception["type"]
        if set(target.body) & lines:
            return Score(CORRECT, answer=args, extra=extra)
        if trace.status in ("timeout", "crashed", "memory", "output_limit"):
            return Score(INCORRECT, answer=args, detail=f"program {trace.status}", extra=extra)
        if target.decision is not None and target.decision in lines:
            extra["failure"] = "prompt_misread"
        return Score(INCORRECT, answer=args, detail="target not reached", extra=extra)


def _witness(instance: Instance) -> str:
    """The instance's witness; a target kept without one has no answer to state."""
    witness = CounterfactualQuestion.from_record(instance.data).witness
    if witness is None:
        raise ValueError(f"{instance.id}: no input reaching the target is known, so no "
                         "answer states its truth (the oracle abstains on it)")
    return witness


def read_arguments(text: str, instance: Instance) -> str | Score:
    """The arguments a counterfactual answer proposes, rebuilt from literals, or the
    ``unparsable`` score (failure ``format_error``) saying why there are none (not
    literals, or not fitting the signature)."""
    return _arguments(text, instance.code, instance.entry_point, instance.args,
                      CounterfactualQuestion.from_record(instance.data).given)


def _arguments(text: str, code: str, entry_point: str, original: str,
               given: tuple[Given, ...]) -> str | Score:
    """``read_arguments`` for a call not yet an instance: the build checks its witnesses
    with this, so the oracle's answers are read exactly as a model's are."""
    call = answer_call(text, entry_point)
    try:
        if call is None:
            raise LiteralError("not an argument list")
        args = answer_arguments(call, original, given)
    except LiteralError as exc:
        return unparsable(text, str(exc), {"failure": "format_error"})
    if not fits_signature(signature_of(code, entry_point), call):
        return unparsable(args, "arguments do not fit the signature",
                          {"failure": "format_error"})
    return args


def _body(target: Target) -> str:
    """The target's body as the prompt names it (a chain target: any of its arms)."""
    kind, line = target.kind, target.line
    what = "else" if kind.endswith("else") else kind
    if target.arms:
        return (f"the body of the `{what}` at line {line} or of an `elif`/`else` arm after "
                "it")
    return f"the body of the `{what}` at line {line}"


def _goal(target: Target) -> str:
    if target.kind == "line":
        return f"line {target.line} runs"
    return f"{_body(target)} runs"


def _not_yet(target: Target) -> str:
    if target.kind == "line":
        return f"line {target.line} does not run"
    return f"{_body(target)} does not run"


register(Task.of(CoveragePrediction()))
register(Task.of(CounterfactualMutation()))
