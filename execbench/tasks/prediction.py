"""Output prediction and input prediction (the CRUXEval-O / CRUXEval-I shape).

``output``: the model sees the program and a call, and completes ``assert f(x) == ??``
with the literal value returned. ``input``: it sees the program and a returned value, and
completes ``assert f(??) == y`` with arguments; the answer is checked by running the
program on those arguments in the sandbox, since many inputs may be right.

A model's answer is only ever read with the literal parser. A dataset call may contain an
argument that is not a literal (CRUXEval has ``lambda x: x < 2``); for the input task the
prompt names such arguments, and an answer is accepted only if it repeats them exactly
(same syntax tree), in which case the dataset's own text is what runs.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from execbench.sandbox.values import (
    LiteralError,
    encode,
    equal,
    is_exact,
    literal_value,
    parse_call_nodes,
    to_literal,
)
from execbench.tasks.base import BuildContext, EveryCall, Message, Score, SkipInstance, register
from execbench.tasks.extract import answer_text

if TYPE_CHECKING:
    from execbench.program import Program
    from execbench.sandbox.pool import Sandbox, Trace

_OUTPUT_INTRO = """\
Below is a Python function together with an assertion that calls it. Work out what the \
call returns by following the code step by step, then complete the assertion with that \
value. Write the value as a Python literal (no variables, no function calls, no \
expressions to evaluate). Put the completed assertion, and nothing else, between \
[ANSWER] and [/ANSWER]."""

_INPUT_INTRO = """\
Below is a Python function together with an assertion stating the value it returned. Find \
arguments for which the call returns exactly that value; if several exist, any one will \
do. Write every argument as a Python literal. Put the completed assertion, and nothing \
else, between [ANSWER] and [/ANSWER]."""

_EXAMPLE_CODE = """\
def f(words, sep):
    kept = [w.upper() for w in words if len(w) > 2]
    return sep.join(kept)"""
_EXAMPLE_ARGS = "['ox', 'cat', 'bird'], '-'"
_EXAMPLE_OUTPUT = "'CAT-BIRD'"


def _block(code: str, assertion: str) -> str:
    return f"[PYTHON]\n{code}\n{assertion}\n[/PYTHON]"


def _require_ok(trace: Trace) -> None:
    if trace.status != "ok":
        what = trace.exception["type"] if trace.exception else trace.detail or ""
        raise SkipInstance(f"the call did not return normally ({trace.status}: {what})")
    if trace.value is None or not is_exact(trace.value):
        raise SkipInstance("the return value has no literal form")


def _parse_statement(text: str) -> ast.AST | None:
    """The answer as one statement/expression, trying the last ``assert`` line as well."""
    candidates = [text] + [line for line in reversed(text.splitlines())
                           if line.strip().startswith("assert")]
    for candidate in candidates:
        try:
            tree = ast.parse(candidate.strip())
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        if len(tree.body) == 1:
            stmt = tree.body[0]
            if isinstance(stmt, ast.Assert):
                return stmt.test
            if isinstance(stmt, ast.Expr):
                return stmt.value
    return None


def _equality(node: ast.AST | None) -> tuple[ast.AST, ast.AST] | None:
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
        return node.left, node.comparators[0]
    return None


class OutputPrediction(EveryCall):
    name = "output"
    description = "predict the value a call returns (CRUXEval-O style)"
    needs_sandbox = False

    def build(self, program: Program, call_index: int, trace: Trace,
              ctx: BuildContext) -> dict[str, Any]:
        _require_ok(trace)
        return {"truth": {"value": trace.value, "repr": trace.value_repr}}

    def prompt(self, instance: dict[str, Any], shots: int) -> list[Message]:
        parts = [_OUTPUT_INTRO]
        if shots:
            parts.append(_block(_EXAMPLE_CODE, f"assert f({_EXAMPLE_ARGS}) == ??"))
            parts.append(f"[ANSWER]\nassert f({_EXAMPLE_ARGS}) == {_EXAMPLE_OUTPUT}\n[/ANSWER]")
        call = f"{instance['entry_point']}({instance['args']})"
        parts.append(_block(instance["code"], f"assert {call} == ??"))
        return [{"role": "user", "content": "\n\n".join(parts)}]

    def reference_response(self, instance: dict[str, Any]) -> str:
        call = f"{instance['entry_point']}({instance['args']})"
        return f"[ANSWER]\nassert {call} == {instance['truth']['repr']}\n[/ANSWER]"

    def score(self, instance: dict[str, Any], response: str | None,
              sandbox: Sandbox | None) -> Score:
        text = answer_text(response)
        if text is None:
            return Score("unparsable", detail="empty response")
        node = _parse_statement(text)
        pair = _equality(node)
        value_node = pair[1] if pair else node
        if value_node is None:
            return Score("unparsable", answer=text, detail="not a Python assertion or value")
        try:
            value = encode(literal_value(value_node))
        except LiteralError as exc:
            return Score("unparsable", answer=text, detail=str(exc))
        verdict = "correct" if equal(value, instance["truth"]["value"]) else "incorrect"
        return Score(verdict, answer=to_literal(value))


class InputPrediction(EveryCall):
    name = "input"
    description = "predict arguments that make a call return a given value (CRUXEval-I style)"
    needs_sandbox = True

    def build(self, program: Program, call_index: int, trace: Trace,
              ctx: BuildContext) -> dict[str, Any]:
        _require_ok(trace)
        args, keywords = parse_call_nodes(program.calls[call_index].args)
        given = [{"position": i, "text": ast.unparse(node)} for i, node in enumerate(args)
                 if not _is_literal(node)]
        given += [{"keyword": kw.arg, "text": ast.unparse(kw.value)} for kw in keywords
                  if kw.arg is not None and not _is_literal(kw.value)]
        if any(kw.arg is None for kw in keywords):
            raise SkipInstance("the call unpacks **kwargs")
        return {"truth": {"output": trace.value, "output_repr": trace.value_repr},
                "given": given}

    def prompt(self, instance: dict[str, Any], shots: int) -> list[Message]:
        parts = [_INPUT_INTRO]
        if instance["given"]:
            fixed = "; ".join(
                f"argument {g['position'] + 1}: {g['text']}" if "position" in g
                else f"keyword {g['keyword']}: {g['text']}" for g in instance["given"])
            parts[0] += (" Some arguments cannot be written as literals; write those exactly"
                         f" as given here: {fixed}.")
        if shots:
            parts.append(_block(_EXAMPLE_CODE, f"assert f(??) == {_EXAMPLE_OUTPUT}"))
            parts.append(f"[ANSWER]\nassert f({_EXAMPLE_ARGS}) == {_EXAMPLE_OUTPUT}\n[/ANSWER]")
        output = instance["truth"]["output_repr"]
        parts.append(_block(instance["code"], f"assert {instance['entry_point']}(??) == {output}"))
        return [{"role": "user", "content": "\n\n".join(parts)}]

    def reference_response(self, instance: dict[str, Any]) -> str:
        call = f"{instance['entry_point']}({instance['args']})"
        return f"[ANSWER]\nassert {call} == {instance['truth']['output_repr']}\n[/ANSWER]"

    def score(self, instance: dict[str, Any], response: str | None,
              sandbox: Sandbox | None) -> Score:
        text = answer_text(response)
        if text is None:
            return Score("unparsable", detail="empty response")
        node = _parse_statement(text)
        pair = _equality(node)
        call = pair[0] if pair else node
        if not isinstance(call, ast.Call):
            return Score("unparsable", answer=text, detail="no call of the function found")
        try:
            args = answer_arguments(call, instance)
        except LiteralError as exc:
            return Score("unparsable", answer=text, detail=str(exc))
        return run_and_compare(instance, args, sandbox)


def _is_literal(node: ast.AST) -> bool:
    try:
        literal_value(node)
    except LiteralError:
        return False
    return True


def answer_arguments(call: ast.Call, instance: dict[str, Any]) -> str:
    """The argument-list text to run for a model's call, built from literals only.

    A non-literal argument passes only when it is the very expression the dataset gave at
    that place; the dataset's text is then used, so the model's text never runs.
    """
    original_args, original_keywords = parse_call_nodes(instance["args"])
    given_positions = {g["position"] for g in instance.get("given", []) if "position" in g}
    given_keywords = {g["keyword"] for g in instance.get("given", []) if "keyword" in g}
    parts: list[str] = []
    for i, node in enumerate(call.args):
        if isinstance(node, ast.Starred):
            raise LiteralError("argument unpacking (*) is not a literal")
        if i in given_positions and i < len(original_args) and \
                ast.dump(node) == ast.dump(original_args[i]):
            parts.append(ast.unparse(original_args[i]))
        else:
            parts.append(to_literal(encode(_literal(node, f"argument {i + 1}"))))
    originals = {kw.arg: kw.value for kw in original_keywords}
    for kw in call.keywords:
        if kw.arg is None:
            raise LiteralError("keyword unpacking (**) is not a literal")
        if kw.arg in given_keywords and ast.dump(kw.value) == ast.dump(originals[kw.arg]):
            parts.append(f"{kw.arg}={ast.unparse(originals[kw.arg])}")
        else:
            parts.append(f"{kw.arg}={to_literal(encode(_literal(kw.value, kw.arg)))}")
    return ", ".join(parts)


def _literal(node: ast.AST, where: str) -> Any:
    try:
        return literal_value(node)
    except LiteralError as exc:
        raise LiteralError(f"{where}: {exc}") from None


def run_and_compare(instance: dict[str, Any], args: str, sandbox: Sandbox | None) -> Score:
    """Run the program on ``args`` in the sandbox and compare with the expected output."""
    from execbench.sandbox.pool import Job, TraceOptions

    if sandbox is None:
        raise RuntimeError("the input task needs a sandbox to score")
    trace = sandbox.run(Job(instance["code"], instance["entry_point"], args,
                            TraceOptions(max_events=0, max_branch_seq=0)))
    if trace.status != "ok":
        what = trace.exception["type"] if trace.exception else trace.detail
        return Score("incorrect", answer=args, detail=f"program {trace.status}: {what}")
    if trace.value is not None and equal(trace.value, instance["truth"]["output"]):
        return Score("correct", answer=args)
    return Score("incorrect", answer=args, detail=f"returned {trace.value_repr}")


register(OutputPrediction())
register(InputPrediction())
