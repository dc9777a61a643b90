"""CodeSense's C and Java task files: functions traced with GDB and JDB, never run here.

Like the Python files (``sources.codesense``), each record becomes one program whose one
call carries a recorded trace with the record's question as a fact; the program says its
language, and nothing that is not Python is ever run. Values are the debuggers' texts,
read by ``debugger_values`` (a value that cannot be read is kept as its published text and
judged by CodeSense's string comparison alone; a value that is only an address, or that
the debugger could not read, is never asked about: its record is skipped with that
reason). The call shows the function's inputs by name, as the debugger recorded them and
without addresses (``name = value``; an address would say whether two pointers alias).

``statement`` (``Statement Type``, ``Source Code``, ``Selected Statement`` and
``Programming Language`` C)
    A statement fact, as for Python: the published kind (``Function Call`` is the call
    kind), the values before it, the value after (a ``Branch`` statement's Yes/No).
``block`` (``Block_Size``)
    A block fact of the published shape: the value a statement gives, asked from the
    function's inputs (not the values just before it), filed under its block size.
``input/output`` (``code``, ``basic_input``, ``output``: C with ``input``, Java without)
    The output, for the ``output`` task, and the basic-typed inputs (``extra["inputs"]``),
    which the ``input`` task asks for as published answers only (an input that gives the
    same output another way cannot be checked without running the code).
``alias`` (``Selected Pointer``, ``Compared Pointer``, ``Aliasing``)
    An alias fact: do two pointers, each as it is when its statement runs (the pointer
    need not appear in the statement), refer to the same memory. The selected statement is
    in the function; the compared one may be in another (a caller), and then the question
    quotes it instead of giving its line.

A statement is found in the code by its text with comments and white space ignored (the
published statements keep comments the code lost, and spacing differs); a text on several
lines gives them all, and the prompt names each.
"""

from __future__ import annotations

import re
from typing import Any

from execbench.program import Call, Program
from execbench.sandbox.trace import Trace
from execbench.sources import debugger_values as debugger
from execbench.sources.generic import build_program, excerpt
from execbench.sources.jsonl import Record, RecordError
from execbench.values import Encoded, LiteralError, is_exact, parse_literal

STATEMENT_KINDS = {"Assignment": "assignment", "Arithmetic Assignment": "arithmetic",
                   "Constant Assignment": "constant", "Branch": "branch",
                   "Function Call": "call"}
"""The C file's ``Statement Type`` and the statement task's kind for it."""

_YES_NO = {"Yes": True, "No": False}
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_HEADER_NAME = re.compile(r"([A-Za-z_]\w*)\s*\(")


def language_of(record: Record) -> str:
    """The record's language, from ``Programming Language`` or the input/output shape."""
    named = record.data.get("Programming Language")
    if isinstance(named, str):
        return named.strip().lower()
    if "basic_input" in record.data:
        return "java" if isinstance(record.data["basic_input"], list) else "c"
    return "python"


def statement(record: Record) -> Program:
    published = record.get("Statement Type")
    if published not in STATEMENT_KINDS:
        raise RecordError(f"unknown Statement Type {published!r}")
    code, entry_point = _c_function(record.get("Source Code"))
    selected = record.get("Selected Statement").strip()
    answer = record.get("Value After Statement Execution", (str, dict))
    value = ["bool", _yes_no(answer)] if published == "Branch" else _asked(answer, selected)
    before = {name: _context(text) for name, text in
              record.get("Variable Values Before Statement", dict).items()}
    fact = statement_fact(_lines(code, selected), selected, STATEMENT_KINDS[published],
                          before, value)
    if published != "Branch":
        fact["text"] = _published_text(answer, value)
    meta = {"kind": "statement", "statement_type": published, **_project(record)}
    return _program(record, code, entry_point, _inputs(record.get("Function Input", dict)),
                    fact, meta)


def statement_fact(lines: list[int], selected: str, kind: str, before: dict[str, Encoded],
                   value: Encoded) -> dict[str, Any]:
    """A published statement question, in either language's file: its first line, every
    line holding its text when there are several, and what it asks."""
    fact: dict[str, Any] = {"task": "statement", "line": lines[0]}
    if len(lines) > 1:
        fact["lines"] = lines
    fact.update({"statement": selected, "kind": kind, "before": before, "value": value})
    return fact


def block(record: Record) -> Program:
    code, entry_point = _c_function(record.get("Source Code"))
    selected = record.get("Selected Statement").strip()
    size = record.get("Block_Size", int)
    if size < 1:
        raise RecordError(f"Block_Size {size} is not a positive count")
    answer = record.get("Value After Statement Execution", (str, dict))
    value = _asked(answer, selected)
    lines = _lines(code, selected)
    fact: dict[str, Any] = {"task": "block", "size": size, "line": lines[0]}
    if len(lines) > 1:
        fact["lines"] = lines
    fact.update({"statement": selected, "value": value,
                 "text": _published_text(answer, value)})
    return _program(record, code, entry_point, _inputs(record.get("Function Input", dict)),
                    fact, {"kind": "block", "block_size": size, **_project(record)})


def alias(record: Record) -> Program:
    code, entry_point = _c_function(record.get("Source Code"))
    fact: dict[str, Any] = {"task": "alias"}
    for key, (statement_key, pointer_key) in (("first", ("Selected Statement",
                                                         "Selected Pointer")),
                                               ("second", ("Compared Statement",
                                                           "Compared Pointer"))):
        pointer = record.get(pointer_key).strip()
        if not re.fullmatch(r"[A-Za-z_][\w.\->\[\]*&]*", pointer):
            raise RecordError(f"{pointer_key} {excerpt(pointer)} is not a pointer expression")
        text = record.get(statement_key).strip()
        try:
            lines = _lines(code, text)
        except RecordError:
            if key == "first":
                raise
            lines = []  # the compared statement may be in another function (a caller)
        fact[key] = {"pointer": pointer, "statement": _COMMENT.sub("", text).strip(),
                     "lines": lines}
    fact["aliased"] = _yes_no(record.get("Aliasing"))
    return _program(record, code, entry_point, _inputs(record.get("Function Input", dict)),
                    fact, {"kind": "alias", **_project(record)})


def input_output(record: Record) -> Program:
    """A C or Java input/output record: the recorded output and the basic inputs."""
    language = language_of(record)
    if language == "java":
        code, entry_point = _java_method(record.get("code"))
        outputs = record.get("output", list)
        if len(outputs) != 1 or not isinstance(outputs[0], dict):
            raise RecordError(f"the record gives {len(outputs)} outputs for one call, "
                              "not one")
        output = _java_value(outputs[0])
        raw = _field(outputs[0], "value", (str, int, float, bool, type(None)))
        shown_output = raw if isinstance(raw, str) else _show(output, language)
        given = {_field(item, "name", str): _java_value(item) for item in
                 record.get("basic_input", list) if isinstance(item, dict)}
        inputs = dict(given)
        chars = {_field(item, "name", str) for item in record.get("basic_input", list)
                 if isinstance(item, dict) and item.get("type") in ("char", "java.lang.Character")}
        args = ", ".join(f"{name} = " + (repr(chr(value[1])) if name in chars and
                                         value[0] == "int" else _show(value, language))
                         for name, value in given.items())
    else:
        code, entry_point = _c_function(record.get("code"))
        published = _dict_text(record.get("output"), "output")
        shown_output = str(published.get("value"))
        output = _asked(shown_output)
        every = _dict_text(record.get("input"), "input")
        basic = _dict_text(record.get("basic_input"), "basic_input") \
            if record.get("basic_input").strip() else {}
        inputs = {name: _asked(item.get("value") if isinstance(item, dict) else item)
                  for name, item in basic.items()}
        args = _inputs({name: text for name, text in every.items() if name != "..."})
    if not is_exact(output) and output[:2] != ["object", "unknown"]:
        raise RecordError("the output has no value a question could ask for")
    extra: dict[str, Any] = {"text": shown_output.strip()}
    usable = {name: value for name, value in inputs.items() if is_exact(value)}
    if usable and len(usable) == len(inputs):
        extra["inputs"] = usable
    trace = Trace(status="ok", value=output, value_repr=shown_output.strip(), extra=extra)
    meta: dict[str, Any] = {"kind": "input_output", "quantized": False,
                            "cyclomatic_complexity": record.get("cyclomatic_complexity", int)}
    if "category" in record.data:
        meta["difficulty"] = record.get("category")
    return build_program(record, code, entry_point, [Call(args, recorded=trace)], meta,
                         language=language)


# --------------------------------------------------------------------------- code


def _c_function(text: str) -> tuple[str, str]:
    """The function's code (ending with a newline) and its name: the last name called at
    the top level of the header (``SWITCH_DECLARE(int) name(...)`` names ``name``)."""
    code = text.rstrip() + "\n"
    brace = code.find("{")
    if brace < 0:
        raise RecordError("the code has no function body")
    header, depth, names = code[:brace], 0, []
    for index, char in enumerate(header):
        if char == "(":
            if depth == 0:
                match = re.search(r"([A-Za-z_]\w*)\s*$", header[:index])
                if match:
                    names.append(match[1])
            depth += 1
        elif char == ")":
            depth -= 1
    if not names:
        raise RecordError(f"no function name in the header {excerpt(header.strip())}")
    return code, names[-1]


def _java_method(text: str) -> tuple[str, str]:
    """A Java method's code (JSON-escaped newlines undone when the code has no real ones)
    and its name."""
    code = text
    if "\n" not in code and "\\n" in code:
        code = code.replace("\\n", "\n").replace('\\"', '"').replace("\\t", "\t")
    code = code.rstrip() + "\n"
    brace = code.find("{")
    names = _HEADER_NAME.findall(code[:brace] if brace >= 0 else "")
    if not names:
        raise RecordError("the code does not start with a method header")
    return code, names[-1]


def _norm(text: str) -> str:
    return re.sub(r"\s+", "", _COMMENT.sub("", text))


def _lines(code: str, selected: str) -> list[int]:
    """The lines holding the statement: its text, comments and white space aside, maybe
    followed by the brace that opens its body; a statement over several lines is found
    by its first one."""
    wanted = _norm(selected.split("\n")[0])
    if not wanted:
        raise RecordError("the selected statement is empty once comments are dropped")
    found = [n for n, text in enumerate(code.split("\n")[:-1], 1)
             if _norm(text) == wanted or _norm(text).startswith(wanted + "{")]
    if not found:  # a statement the code wraps over lines: match its first line's start
        found = [n for n, text in enumerate(code.split("\n")[:-1], 1)
                 if _norm(text) and wanted.startswith(_norm(text))
                 and _norm("".join(code.split("\n")[n - 1:n + 4])).startswith(wanted)]
    if not found:
        raise RecordError(f"the statement {excerpt(selected)} is nowhere in the function")
    return found


# --------------------------------------------------------------------------- values


def _asked(text: Any, statement: str = "") -> Encoded:
    """The value a question asks for: typed when the debugger's text reads in full, else
    the published text (opaque, judged by string comparison; a struct with parts that do
    not read is shown with those parts as published); an address or an unreadable value
    is never asked about. A bare hexadecimal number is an address (GDB prints integers in
    decimal) unless the statement itself writes that constant (``m |= 0x800000``)."""
    try:
        value = debugger.read_record(text)
    except debugger.AddressValue as exc:
        if isinstance(text, str) and re.fullmatch(r"0[xX][0-9a-fA-F]+", text.strip()) \
                and re.search(rf"(?<!\w){text.strip()}(?!\w)", statement):
            return ["int", int(text.strip(), 16)]  # a constant the statement writes in hex
        raise RecordError(f"the value asked for is an address ({exc}), which differs from "
                          "run to run") from None
    except debugger.Unreadable as exc:
        raise RecordError(f"the value asked for was not recorded ({exc})") from None
    except LiteralError:
        value = None
    if value is not None and is_exact(value):
        return value
    shown = text.strip() if isinstance(text, str) else str(text)
    return ["object", "unknown", shown if value is None else _show(value, "c")]


def _context(text: Any) -> Encoded:
    """A value shown as context: typed when it reads, else its published text."""
    try:
        return debugger.read_record(text)
    except LiteralError:
        return ["object", "unknown", text.strip() if isinstance(text, str) else str(text)]


def _published_text(answer: Any, value: Encoded) -> str:
    """The text CodeSense compared answers with: the published text when there is one."""
    return answer.strip() if isinstance(answer, str) else _show(value, "c")


def _show(value: Encoded, language: str) -> str:
    return debugger.show(value, language)


def _inputs(given: dict[str, Any]) -> str:
    """The call's text: each input as ``name = value``, in the debugger's form without
    addresses; a pointer whose target was not recorded, or a value the debugger could not
    read, is said to be so. A text that does not read at all (the C input/output file
    writes some structs as ``{field: value}``) is shown as published, addresses and all:
    those records ask for outputs and basic inputs, never for pointers."""
    parts = []
    for name, record in given.items():
        try:
            shown = _show(debugger.read_record(record), "c")
        except debugger.AddressValue:
            shown = "<a pointer whose target was not recorded>"
        except debugger.Unreadable:
            shown = debugger.NOT_RECORDED
        except LiteralError:
            shown = record.strip() if isinstance(record, str) else str(record)
        parts.append(f"{name} = {shown}")
    return ", ".join(parts)


def _java_value(item: dict[str, Any]) -> Encoded:
    type_name = _field(item, "type", str)
    raw = item.get("value")
    try:
        return debugger.read_java(raw, type_name)
    except LiteralError:
        return ["object", "unknown", str(raw)]


def _field(item: Any, key: str, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(item, dict) or not isinstance(item.get(key), kind):
        raise RecordError(f"an input or output item has no {key!r}")
    return item[key]


def _dict_text(text: str, key: str) -> dict[str, Any]:
    """A field the authors wrote as a Python dict's text (``{'type': 'int', ...}``)."""
    try:
        parsed = parse_literal(text)
    except LiteralError as exc:
        raise RecordError(f"key {key!r} is not a dict's text ({exc})") from None
    if not isinstance(parsed, dict):
        raise RecordError(f"key {key!r} is not a dict's text")
    return parsed


def _yes_no(text: Any) -> bool:
    if not isinstance(text, str) or text.strip() not in _YES_NO:
        raise RecordError(f"the answer {excerpt(str(text))} is not Yes or No")
    return _YES_NO[text.strip()]


def _project(record: Record) -> dict[str, str]:
    for key in ("Project Information", "Program Information"):
        found = record.data.get(key)
        if isinstance(found, dict):
            found = found.get("Project Name")
        if isinstance(found, str) and found.strip():
            return {"project": found.removeprefix("Project Name:").strip()}
    return {}


def _program(record: Record, code: str, entry_point: str, args: str, fact: dict[str, Any],
             meta: dict[str, Any]) -> Program:
    trace = Trace(status="ok", extra={"facts": [fact]})
    return build_program(record, code, entry_point, [Call(args, recorded=trace)],
                         {**meta, "quantized": False}, language=language_of(record))

