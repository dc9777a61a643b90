"""CodeSense's published task files: real functions whose truth was recorded.

(This module reads the Python files; the C and Java ones, told apart by their keys, are
read by ``codesense_native``.)

The authors traced real projects' test runs and published, per task, one JSONL record per
question (``../shared/data/codesense/*.jsonl.gz``). The functions need their projects
around them (imports, globals, classes), so nothing here is ever run: each record becomes
one program with one call whose trace is *recorded* (``Call.recorded``), and the tasks read
their truth from it. Which task file a record comes from is told by its keys:

``statement`` (``Statement Type``, ``Source Code``, ``Selected Statement``, ...)
    The function (the appended call cut off), a call built from ``Function Input``
    (keyword arguments in the signature's order; positional-only ones by position,
    ``*args``/``**kwargs`` unpacked, empty ones left out; ``self.x`` entries are states,
    not arguments) and one statement fact: the statement's line (found by its text; when
    the text occurs more than once, the line at which the recorded states show the
    published value), kind (from the published ``Statement Type``, as published), the
    values before it and the value it gives (a ``Branch``
    statement's ``Yes``/``No`` is the condition's bool). A record of the plain (not
    quantized) file adds CodeSense's block question about the same statement where it can
    ask one (``block_fact``), or says why not (``trace.extra["unasked"]``).
``branch`` (``Source Code`` numbered ``1.``, ``question``, ``answer``)
    One branch fact ``{"line": N, "executed": bool}``; the line text quoted in the question
    must be line N of the code (a trailing comment aside).
``loop`` (``loop_code`` numbered ``1:`` or ``1.``, ``question``, ``answer``)
    One loop fact, by the question's wording: ``iterations`` (loop_iteration files),
    ``body`` (loop_body: the value of a variable at a line after its k-th iteration; k is
    the published count, which numbers the values recorded at that line), ``after``
    (loop_final and loop_after: a variable's value once the loop is done). ``line`` is the
    loop's ``for``/``while`` line; a body fact adds ``"at": L``, the line the question names.
``input_output`` (``code``, ``input``, ``output``, ``cyclomatic_complexity``)
    A plain recorded trace: ``status`` ok and ``value`` the output, for the ``output`` task,
    and for the ``input`` task, which asks it only where the function runs alone and
    returns that output (it checks this in the sandbox at build time).

Values are the authors' ``repr`` texts, read with the literal parser; a value that is not
a literal (numpy arrays, objects, ``REPR FAILED``, texts the authors' pipeline cut short),
whether asked for or shown as context, is kept as the opaque ``["object", "unknown",
text]``: the tasks show that text and score an answer to it by CodeSense's normalised
string comparison alone (no strict verdict exists for it). An input/output trace also
keeps the published output text as ``extra["text"]``. An argument only has to be Python
syntax, since the call is shown, never run; a statement record's inputs that are not
(``REPR FAILED``, printed tables) are left out of its call, which its question never
shows, and kept in the program's ``inputs_not_syntax``. Facts from the ``_quantized``
files add ``"category"``, the published abstract value (an input/output trace carries
``category`` and ``input_category`` instead). Line numbers are lines of the program's
code, which is the published function with its line-number prefixes stripped.

What is still skipped on the published files (counts per file in docs/sources.md): the code
does not compile (cut at a ``#`` inside a string); a branch question's line is past the
end of the code; a loop question names no variable (its published answer is one letter)
or its line is not a ``for``/``while`` line (a generator expression, a line of no loop);
an input/output record whose input is not Python syntax (its question shows the call).
Kept as the authors asked them: a branch question about a line the published code blanked
(it held a comment), or quoting the text of the line next to the one it numbers (the line
nearest the number that holds the text is meant); a statement on several lines the states
do not tell apart (the prompt names every one); pytest's ``@py_assert`` temporaries.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from execbench.program import PYTHON, Call, Program
from execbench.sandbox.trace import Trace
from execbench.sources import codesense_native as native
from execbench.sources.generic import build_program, excerpt, parse_module
from execbench.sources.jsonl import Record, RecordError
from execbench.values import LiteralError, encode, parse_expression, parse_literal, to_literal

ID_KEY = "idx"

KEY_SETS: tuple[frozenset[str], ...] = (
    frozenset({"Source Code", "Selected Pointer", "Compared Pointer", "Aliasing"}),
    frozenset({"Source Code", "Selected Statement", "Block_Size"}),
    frozenset({"code", "basic_input", "output"}),
    frozenset({"idx", "Statement Type", "Source Code", "Selected Statement"}),
    frozenset({"idx", "Source Code", "question", "answer"}),
    frozenset({"idx", "loop_code", "question", "answer"}),
    frozenset({"idx", "code", "input", "output", "cyclomatic_complexity"}),
)
"""Keys that tell each kind of CodeSense record apart (and the format from others): the C
and Java shapes (``codesense_native``) first, then the Python ones."""

STATEMENT_KINDS = {"Assignment": "assignment", "Arithmetic Assignment": "arithmetic",
                   "Constant Assignment": "constant", "Branch": "branch", "API": "call"}
"""The published ``Statement Type`` and the statement task's kind for it."""

_YES_NO = {"Yes": True, "No": False}
_NUMBER = re.compile(r"(\d+)([.:])( ?)")
_BRANCH_QUESTION = re.compile(r'Is line (\d+), "(.*)" executed when "(.*)" is called\?', re.S)
_PYTEST_TEMPORARY = re.compile(r"@py_assert\d+")
"""The temporaries pytest's assertion rewriting adds to an ``assert`` line: not names in the
code, but the authors recorded them and asked about them, so the question is asked as
published (the prompt says what the name is)."""
_LOOP_QUESTIONS = {
    "iterations": re.compile(r"How many times will the loop on line (?P<line>\d+) execute "
                             r"when '(?P<call>.*)' is called\?", re.S),
    "body": re.compile(r"What is the value of ' (?P<variable>[^' ]+) ' in line '(?P<line>\d+)' "
                       r"after '(?P<iteration>\d+)' th iteration when '(?P<call>.*)' is "
                       r"executed\?", re.S),
    "final": re.compile(r"What is the final value of '(?P<variable>[^' ]+)' after the loop "
                        r"\(lines (?P<line>\d+)-\d+\) completes when '(?P<call>.*)' is "
                        r"executed\?", re.S),
    "after": re.compile(r"What is the value of '(?P<variable>[^' ]+)' in line (?P<post>\d+) "
                        r"after executing '(?P<call>.*)'\?", re.S),
}


def build(record: Record) -> Program:
    """A program from one CodeSense record, of whichever task file it comes from."""
    present = set(record.data)
    for keys, builder in zip(KEY_SETS, _BUILDERS, strict=True):
        if keys <= present:
            return builder(record)
    raise RecordError("not a CodeSense record (no statement, branch, loop or "
                      "input/output keys)")


def held_tasks(programs: list[Program]) -> list[str]:
    """The tasks whose questions the programs' records hold, in name order (``output``
    and ``input`` for an input/output file, the input questions of C and Java where a
    record publishes its inputs; ``statement`` and ``block`` for the Python statement
    file), so a build of it needs no ``--tasks``."""
    held: set[str] = set()
    for program in programs:
        trace = program.calls[0].recorded
        facts = trace.extra.get("facts") if trace is not None else None
        held.update([fact["task"] for fact in facts] if facts else ["output"])
        if trace is not None and ("inputs" in trace.extra
                                  or not facts and program.language == PYTHON):
            held.add("input")
    return sorted(held)


def _statement(record: Record) -> Program:
    published = record.get("Statement Type")
    if published not in STATEMENT_KINDS:
        raise RecordError(f"unknown Statement Type {published!r}")
    code, entry_point, function = _function(record.get("Source Code"))
    selected = record.get("Selected Statement").strip()
    answer = record.get("Value After Statement Execution")
    value = ["bool", _yes_no(answer)] if published == "Branch" else _asked(answer)
    states = record.get("Variable States During Runtime", dict)
    before = {name: _shown(text) for name, text in
              record.get("Variable Values Before Statement", dict).items()}
    fact = native.statement_fact(_statement_lines(code, selected, answer, states), selected,
                                 STATEMENT_KINDS[published], before, value)
    given = record.get("Function Input", dict)
    args, unshown = _arguments(function, given)
    meta: dict[str, Any] = {"kind": "statement", "statement_type": published}
    if unshown:
        meta["inputs_not_syntax"] = unshown
    project = record.optional("Program Information") or ""
    if project.startswith("Project Name:"):
        meta["project"] = project.removeprefix("Project Name:").strip()
    program = _program(record, code, entry_point, args, fact, meta)
    if "quantized value" not in record.data:  # the quantized file repeats these questions
        _add_block(program, function, fact, given, unshown)
    return program


def _add_block(program: Program, function: ast.FunctionDef | ast.AsyncFunctionDef,
               statement: dict[str, Any], given: dict[str, Any],
               unshown: dict[str, str]) -> None:
    """The block question a statement record holds, added to its recorded trace: the value
    the statement gives, asked from the call's inputs rather than the values just before
    it, filed under its block size, as CodeSense's block task asks it (``block_fact``);
    or, where the record cannot ask it, the reason, for the block task to report."""
    trace = program.calls[0].recorded
    assert trace is not None, "a published record's call is recorded"
    try:
        trace.extra["facts"].append(block_fact(program.code, function, statement, given,
                                               unshown))
    except RecordError as exc:
        trace.extra["unasked"] = {"block": str(exc)}


MAX_BLOCK = 10
"""The largest block size of CodeSense's Python block questions (their curation asks about
code lines 1 to 10 of a function)."""


def block_fact(code: str, function: ast.FunctionDef | ast.AsyncFunctionDef,
               statement: dict[str, Any], given: dict[str, Any],
               unshown: dict[str, str]) -> dict[str, Any]:
    """The block question of a statement fact, in the shape of the C file's (``size``,
    ``line``, ``statement``, ``value``). CodeSense built its Python block questions from
    the same recorded runs: the statement on the function's n-th code line (blank lines,
    comment lines and the docstring not counted; the ``def`` line is line 0) and the value
    it gave, asked from the inputs, with block size n. Raises ``RecordError`` where the
    record cannot ask it: a condition (their block questions skip control lines), a text
    on several lines (each with its own size), a call that cannot show every input the
    answer may rest on, a line past ``MAX_BLOCK``."""
    if statement["kind"] == "branch":
        raise RecordError("a condition: block questions ask for the value a statement "
                          "assigns or a call gives")
    if "lines" in statement:
        raise RecordError("the statement's text is on several lines, each with its own "
                          "block size")
    if unshown:
        raise RecordError("an input was recorded as a text that is no Python syntax, which "
                          "the call cannot show, and a block question is asked from the "
                          "inputs alone")
    if any(name.startswith("self.") for name in given):
        raise RecordError("the call cannot show the object's recorded attributes "
                          "(self.x), and a block question is asked from the inputs alone")
    size = len(_code_lines(code, function, statement["line"]))
    if size > MAX_BLOCK:
        raise RecordError(f"the statement is past code line {MAX_BLOCK} of the function, "
                          "where CodeSense's Python block questions stop")
    return {"task": "block", "size": size, "line": statement["line"],
            "statement": statement["statement"], "value": statement["value"]}


def _code_lines(code: str, function: ast.FunctionDef | ast.AsyncFunctionDef,
                last: int) -> list[int]:
    """The function's code lines after its first one, up to ``last``: neither blank, nor
    a comment alone, nor part of the docstring."""
    first = function.body[0]
    docstring = range(first.lineno, (first.end_lineno or first.lineno) + 1) \
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
        and isinstance(first.value.value, str) else range(0)
    return [number for number, text in enumerate(code.split("\n")[:last], 1)
            if number > 1 and number not in docstring and text.strip()
            and not text.strip().startswith("#")]


def _branch(record: Record) -> Program:
    code, entry_point, _ = _function(_unnumbered(record.get("Source Code")))
    question = record.get("question")
    match = _BRANCH_QUESTION.fullmatch(question)
    if match is None:
        raise RecordError(f"question {excerpt(question)} is not 'Is line N, \"...\" executed "
                          "when \"f(...)\" is called?'")
    line, quoted, call = int(match[1]), match[2].strip(), match[3]
    fact = {"task": "branch", "line": _branch_line(code, line, quoted),
            "executed": _yes_no(record.get("answer"))}
    return _program(record, code, entry_point, _call_arguments(call, entry_point), fact,
                    {"kind": "branch"})


def _branch_line(code: str, line: int, quoted: str) -> int:
    """The line a branch question asks about. The published code blanked whole-line
    comments (a question quoting one asks about that blank line, as the authors asked it),
    and some questions number the line one off from the text they quote: then the line
    nearest ``line`` holding that text is meant."""
    text = _line_text(code, line)
    if _same_line(text, quoted) or not text and (not quoted or quoted.startswith("#")):
        return line
    holding = [n for n, other in enumerate(code.split("\n")[:-1], 1)
               if quoted and _same_line(other.strip(), quoted)]
    nearest = sorted(holding, key=lambda n: abs(n - line))
    if not nearest or len(nearest) > 1 and abs(nearest[0] - line) == abs(nearest[1] - line):
        raise RecordError(f"the question quotes {excerpt(quoted)} as line {line}, but that "
                          f"line is {excerpt(text)}, and no one line nearest it holds the text")
    return nearest[0]


def _loop(record: Record) -> Program:
    code, entry_point, function = _function(_unnumbered(record.get("loop_code")))
    kind, fields = _loop_question(record.get("question"))
    answer = record.get("answer").strip()
    if kind == "after":
        line, post = _loop_range(record, int(fields["post"]))
    else:
        line = int(fields["line"])
    loop = _enclosing_loop(function, line)
    if loop is None or (kind != "body" and loop != line):
        raise RecordError(f"line {line} is not {'in' if kind == 'body' else 'the line of'} "
                          "a for or while loop")
    fact: dict[str, Any] = {"task": "loop", "line": loop}
    if kind == "iterations":
        count = _asked(answer)
        if count[0] != "int":
            raise RecordError(f"the iteration count {excerpt(answer)} is not a whole number")
        fact.update(question="iterations", value=count)
    elif kind == "body":
        fact.update(at=line, question="body", variable=fields["variable"],
                    iteration=int(fields["iteration"]), value=_asked(answer))
    else:
        fact.update(question="after", variable=fields["variable"],
                    value=_asked(answer))
    meta = {"kind": f"loop_{'iteration' if kind == 'iterations' else kind}"}
    if kind == "after":
        meta["post_loop_line"] = post
    return _program(record, code, entry_point, _call_arguments(fields["call"], entry_point),
                    fact, meta)


def _input_output(record: Record) -> Program:
    code, entry_point, _ = _function(record.get("code"))
    output = record.get("output")
    value = _asked(output)
    extra: dict[str, Any] = {"text": output.strip()}
    if "quantized_value_output" in record.data:
        extra.update(category=record.get("quantized_value_output"),
                     input_category=record.get("quantized_value_input"))
    shown = output.strip() if value[0] == "object" else to_literal(value)
    trace = Trace(status="ok", value=value, value_repr=shown, extra=extra)
    meta = {"kind": "input_output", "quantized": "category" in extra,
            "difficulty": record.get("category"),
            "cyclomatic_complexity": record.get("cyclomatic_complexity", int),
            "index": record.get("index", int)}
    call = Call(record.get("input"), recorded=trace)
    return build_program(record, code, entry_point, [call], meta)


def _loop_question(question: str) -> tuple[str, dict[str, str]]:
    """Which loop question this is, and the parts it quotes."""
    for kind, pattern in _LOOP_QUESTIONS.items():
        match = pattern.fullmatch(question)
        if match is None:
            continue
        variable = match.groupdict().get("variable")
        if variable is not None and not (variable.isidentifier()
                                         or _PYTEST_TEMPORARY.fullmatch(variable)):
            raise RecordError(f"the question asks about {variable!r}, which is not a name")
        return kind, match.groupdict()
    raise RecordError(f"question {excerpt(question)} is none of the loop questions "
                      "(each names a variable)")


def _statement_any(record: Record) -> Program:
    """A statement record of either language (the C file adds ``Function Call``)."""
    if native.language_of(record) == "c":
        return native.statement(record)
    return _statement(record)


_BUILDERS: tuple[Callable[[Record], Program], ...] = (
    native.alias, native.block, native.input_output, _statement_any, _branch, _loop,
    _input_output)


def _program(record: Record, code: str, entry_point: str, args: str, fact: dict[str, Any],
             meta: dict[str, Any]) -> Program:
    """The program with its one recorded call, whose trace carries ``fact``."""
    quantized = "quantized value" in record.data
    if quantized:
        fact["category"] = record.get("quantized value")
    trace = Trace(status="ok", extra={"facts": [fact]})
    return build_program(record, code, entry_point, [Call(args, recorded=trace)],
                         {**meta, "quantized": quantized})


# --------------------------------------------------------------------------- code


def _unnumbered(text: str) -> str:
    """The code without the ``1.``/``1:`` prefixes (and the one space after them, when the
    file writes one) that branch and loop files put before each line."""
    lines = text.split("\n")
    first = _NUMBER.match(lines[0])
    if first is None or first[1] != "1":
        raise RecordError("the code's lines are not numbered from 1")
    mark, space = first[2], first[3]
    out = []
    for number, line in enumerate(lines, 1):
        prefix = f"{number}{mark}"
        if not line.startswith(prefix):
            raise RecordError(f"line {number} of the code does not start with {prefix!r}")
        line = line.removeprefix(prefix)
        out.append(line.removeprefix(space))
    return "\n".join(out)


def _function(text: str) -> tuple[str, str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The function's code (the call appended after it cut off), its name and its node.

    The code starts at the function's first line, so its line numbers are the published
    ones. (A method comes with its ``def`` at column 0 and its body still indented for its
    class, which compiles as it is.)"""
    lines = text.split("\n")
    header = re.match(r"\s*(?:async\s+)?def\s+(\w+)\s*\(", lines[0])
    if header is None:
        raise RecordError(f"the code does not start with a def ({excerpt(lines[0])})")
    name = header[1]
    calls = [i for i, line in enumerate(lines) if i and line.startswith(f"{name}(")]
    if calls:
        lines = lines[:calls[-1]]
    code = "\n".join(lines).rstrip() + "\n"
    tree = parse_module(code)
    node = tree.body[0] if tree.body else None
    if len(tree.body) != 1 or not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        raise RecordError("the code is not one function definition")
    return code, name, node


def _line_text(code: str, line: int) -> str:
    lines = code.split("\n")[:-1]  # the code ends with a newline; only "\n" ends a line
    if not 1 <= line <= len(lines):
        raise RecordError(f"line {line} is not a line of the function ({len(lines)} lines)")
    return lines[line - 1].strip()


def _same_line(text: str, quoted: str) -> bool:
    """The quoted line is the code's line, give or take a comment the code dropped."""
    return bool(text) and (quoted == text or quoted.startswith(text)
                           and quoted[len(text):].lstrip().startswith("#"))


def _statement_lines(code: str, statement: str, answer: str,
                     states: dict[str, Any]) -> list[int]:
    """The lines that may hold the selected statement. The states the authors recorded tell
    apart two lines with the same text: the one where a variable took the answer. When
    they do not, every line with the text is returned: the question (the statement, the
    values before it) is the same at each, and the prompt names them all."""
    lines = [n for n, text in enumerate(code.split("\n"), 1) if _same_line(text.strip(),
                                                                         statement)]
    if len(lines) > 1:
        recorded = {int(at) for history in states.values() if isinstance(history, list)
                    for at, text in _pairs(history) if text == answer}
        lines = [n for n in lines if n in recorded] or lines
    if not lines:
        raise RecordError(f"the statement {excerpt(statement)} is nowhere in the function")
    return lines


def _pairs(history: list[Any]) -> list[tuple[float, str]]:
    return [(item[0], item[1]) for item in history if isinstance(item, list)
            and len(item) == 2 and isinstance(item[0], int | float)]


def _enclosing_loop(function: ast.AST, line: int) -> int | None:
    """The line of the innermost for/while loop whose lines include ``line``."""
    found = None
    for node in ast.walk(function):
        if (isinstance(node, ast.For | ast.AsyncFor | ast.While)
                and node.lineno <= line <= (node.end_lineno or node.lineno)
                and (found is None or node.lineno > found)):
            found = node.lineno
    return found


def _loop_range(record: Record, post: int) -> tuple[int, int]:
    """A loop_after record's loop line, checked against the line its question names."""
    span, post_line = record.get("loop_range", list), record.get("post_loop_line", int)
    if post != post_line or not span or not isinstance(span[0], int):
        raise RecordError(f"the question's line {post} is not the record's post_loop_line "
                          f"{post_line}, or loop_range {span!r} gives no line")
    return span[0], post


# --------------------------------------------------------------------------- calls


def _arguments(function: ast.FunctionDef | ast.AsyncFunctionDef,
               given: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """Argument text for the recorded inputs (``name -> repr``), in the signature's order,
    and the inputs left out of it because their text is not Python syntax (``REPR
    FAILED``, a table's printout): a statement question shows the values before the
    statement, never the call, so it can be asked without them; they are kept, as the
    authors wrote them, in the program's ``inputs_not_syntax``."""
    spec = function.args
    parts: list[str] = []
    unshown: dict[str, str] = {}

    def argument(name: str) -> str | None:
        text = given[name]
        if not isinstance(text, str):
            raise RecordError(f"the input {name!r} is not a text")
        try:
            parse_expression(text)
        except LiteralError:
            unshown[name] = text
            return None
        return text.strip()

    for param in spec.posonlyargs:
        if param.arg in given and (text := argument(param.arg)) is not None:
            parts.append(text)
    for param in spec.args:
        if param.arg in given and (text := argument(param.arg)) is not None:
            parts.append(f"{param.arg}={text}")
    for param, star in ((spec.vararg, "*"), (spec.kwarg, "**")):
        if param is not None and param.arg in given:
            text = argument(param.arg)
            if text is not None and text not in ("()", "{}"):
                parts.append(star + text)
    for param in spec.kwonlyargs:
        if param.arg in given and (text := argument(param.arg)) is not None:
            parts.append(f"{param.arg}={text}")
    return ", ".join(parts), unshown


def _call_arguments(call: str, entry_point: str) -> str:
    """The argument text of a call quoted in a question, which must call the function."""
    call = call.strip()
    if not (call.startswith(f"{entry_point}(") and call.endswith(")")):
        raise RecordError(f"the question's call {excerpt(call)} is not a call of "
                          f"{entry_point}")
    return call[len(entry_point) + 1:-1]


# --------------------------------------------------------------------------- values


def _asked(text: str) -> list:
    """The typed value a question asks for: typed when it is a literal, else the authors'
    text as an opaque value (``OPAQUE``), which the tasks show and score as the authors did:
    by CodeSense's normalised string comparison."""
    return _shown(text.strip())


def _shown(text: Any) -> list:
    """A value given as context: typed when it is a literal, else the authors' text."""
    text = text if isinstance(text, str) else repr(text)
    try:
        return encode(parse_literal(text))
    except LiteralError:
        return ["object", "unknown", text]


def _yes_no(text: str) -> bool:
    if text.strip() not in _YES_NO:
        raise RecordError(f"the answer {excerpt(text)} is not Yes or No")
    return _YES_NO[text.strip()]
