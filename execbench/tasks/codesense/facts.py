"""Facts: the questions the CodeSense tasks ask about one call, one class per kind.

A fact is a JSON object whose ``task`` names its kind; the other keys, by kind (values
are typed JSON, ``execbench.values``; lines are numbered from 1 in the program's code):

* ``statement``: ``line``, ``statement`` (its text; a published record whose text is on
  several lines, which its states do not tell apart, adds them all as ``lines``),
  ``kind`` (one of ``kinds.KINDS``),
  ``before`` (``{name: value}`` of the names it reads, just before it runs) and ``value``
  (its value once it has run: the assigned value, a tuple for several names, or for a
  branch header whether its body was entered);
* ``block``: ``size`` (k), ``lines`` (the first lines of the k statements, in the order
  they ran) and ``after`` (``{name: value}`` of the locals that then differ from those at
  the call's start);
* ``loop``: ``line`` (the loop's header), ``question`` (``iterations``, ``body`` or
  ``after``) and ``value``; ``body`` and ``after`` questions also name a ``variable``,
  ``body`` questions an ``iteration`` (k, from 1), and a published one the line ``at``
  which its variable took its k-th value;
* ``branch``: ``line`` (the first line of a block that runs only on some paths) and
  ``executed``.

A trace that is a full run gives facts by ``derive``; a recorded trace that is not (a
published CodeSense record, ``sources.codesense``) brings them ready-made in
``trace.extra["facts"]``, and then nothing is derived: ``facts_for`` is the one way in.
An instance keeps its fact's record as it came (``fact``), key order included; the classes
read it and carry what differs between kinds: the prompt's intro, question and answer
format, how an answer is read and shown, the kind and variant an instance is filed under.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from execbench.program import PYTHON
from execbench.tasks.codesense import derive
from execbench.tasks.codesense.answers import read_mapping, read_yes_no
from execbench.tasks.codesense.kinds import KINDS, Function, analyse
from execbench.tasks.common.abstract import DEFINITIONS
from execbench.tasks.common.json_fields import list_of, object_of, text_of
from execbench.tasks.common.languages import Language, assigned_name, language
from execbench.values import Encoded, LiteralError

if TYPE_CHECKING:
    from execbench.json_types import JSON, JSONObject
    from execbench.sandbox.trace import State, Trace

_TAGS = "between [ANSWER] and [/ANSWER] (or between <ans> and </ans>)"
PUT = f"Put the answer, and nothing else, {_TAGS}."
CONCRETE = "{value_format} " + PUT
MAPPING = ("Write the answer as a Python dict literal from variable name to value, such as "
           "{{'x': 1, 'items': [2]}}, with every value a Python literal. Put it, and nothing "
           f"else, {_TAGS}.")
YES_NO = f"Answer yes or no, {_TAGS}."
ABSTRACT = ("Do not give the value itself: give the name of its category, chosen from the "
            f"definitions below, {_TAGS}.\n\nCategories, by the type of the value:\n"
            + DEFINITIONS)
"""The answer formats prompts state (``ABSTRACT`` for every kind with abstract values)."""


class NoFacts(ValueError):
    """The call gives no facts at all; the message says why (a skip reason)."""


class Fact:
    """One question about a call and its answer, read from the fact's record."""

    task: ClassVar[str]
    """The kind: the records' ``task`` and the name of the task that asks it."""
    fields: ClassVar[dict[str, type]] = {}
    """The keys every record of the kind has, with their types."""
    intro: ClassVar[str]
    """What the prompt says before the answer format and the question (``{language}``
    stands for the language's name)."""
    answer_format: ClassVar[str] = CONCRETE
    """The format a concrete answer takes (``{value_format}`` stands for the language's
    way of writing a value)."""
    nothing: ClassVar[str] = ""
    """Why a call whose run gives no fact of this kind is skipped."""

    def __init__(self, record: JSONObject, language_key: str = PYTHON) -> None:
        self.record = record
        self.language: Language = language(language_key)

    @classmethod
    def read(cls, record: JSONObject, language_key: str = PYTHON) -> Fact | None:
        """The fact, or None when the record is not a well-formed one of this kind."""
        for key, kind in cls.fields.items():
            value = record.get(key)
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                return None
        return cls(record, language_key) if cls._valid(record) else None

    @property
    def introduction(self) -> str:
        return self.intro.format(language=self.language.name)

    @property
    def direct_introduction(self) -> str:
        """The introduction of a prompt that asks for the answer alone (``--prompt
        direct``): the same, where it asks for no working."""
        return self.introduction

    @property
    def format_line(self) -> str:
        """The answer format a concrete answer is asked in."""
        return self.answer_format.format(value_format=self.language.value_format)

    @classmethod
    def _valid(cls, record: JSONObject) -> bool:
        return True

    @classmethod
    def derive(cls, function: Function, entry_point: str, trace: Trace,
               max_block: int) -> list[JSONObject]:
        """The facts of the kind a full run gives (``derive``)."""
        raise NotImplementedError

    @property
    def asked(self) -> Encoded:
        """The typed-JSON value the question asks for."""
        return list_of(self.record, "value")

    @property
    def kind(self) -> str:
        """What the instance is counted under (``suite_counts``, ``summarize``)."""
        return self.task

    @property
    def variant(self) -> str:
        """The last part of the instance's id."""
        return f"L{self.record['line']}"

    def question(self, call: str) -> str:
        """The question, after the numbered code."""
        raise NotImplementedError

    def answer_text(self, value: Encoded) -> str:
        """How a concrete answer states ``value``."""
        return self.language.show(value)

    def read_answer(self, text: str) -> Encoded:
        """The value a concrete answer states; ``LiteralError`` says what was expected."""
        return self.language.read(text)


def _entry_states(function: Function, entry_point: str, trace: Trace) -> list[State]:
    states = derive.entry_states(function, entry_point, trace)
    if not states:
        raise NoFacts("the trace has no variable states of the entry point's frame")
    return states


def _encoded(value: JSON) -> Encoded:
    """A value of a fact's record, which is typed JSON (a list)."""
    if not isinstance(value, list):
        raise ValueError(f"not a typed-JSON value: {value!r}"[:300])
    return value


def _where(record: JSONObject) -> str:
    """The line of a statement question, or each line that holds its text."""
    lines = record.get("lines")
    if not isinstance(lines, list) or not lines:
        lines = [record["line"]]
    return f"line {lines[0]}" if len(lines) == 1 else \
        f"line {' or '.join(map(str, lines))}: the text is on each, the same question"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class StatementFact(Fact):
    task = "statement"
    fields = {"line": int, "statement": str, "kind": str, "before": dict, "value": list}
    intro = ("Below is a {language} function, one of its statements, and the values the "
             "variables that statement reads hold just before it runs. Work out the "
             "statement's value once it has run: for an assignment, the value it gives its "
             "target (a tuple of the values, in order, when it assigns several names); for "
             "an `if`, `elif` or `while` line, True if execution enters its body and False "
             "if not.")
    nothing = "no assignment or condition of the function finished running"

    @classmethod
    def _valid(cls, record: JSONObject) -> bool:
        return record["kind"] in KINDS

    @classmethod
    def derive(cls, function: Function, entry_point: str, trace: Trace,
               max_block: int) -> list[JSONObject]:
        return [fact.to_record() for fact in
                derive.statement_facts(function, _entry_states(function, entry_point, trace))]

    @property
    def kind(self) -> str:
        return text_of(self.record, "kind")

    def question(self, call: str) -> str:
        before = object_of(self.record, "before")
        values = ", ".join(f"{name} = {self.language.show(_encoded(value))}"
                           for name, value in before.items()) \
            if before else "(it reads no variables)"
        return (f"Statement ({_where(self.record)}):\n{self.record['statement']}\n\n"
                f"Values just before it runs: {values}\n\nWhat is the statement's value once "
                "it has run?")


class BlockFact(Fact):
    """Two shapes: a derived fact (``lines``, ``after``) asks for the locals changed by the
    first k statements; a published one (CodeSense's C block file, and its Python statement
    file's records: ``line``, ``statement``, ``value``) asks for the value one statement
    gives, worked out from the call's inputs through the block of ``size`` lines before
    it."""

    task = "block"
    fields = {"size": int}
    published_intro = ("Below is a {language} function, the inputs of one call to it, and "
                       "one of its statements. Work out, from those inputs, the value the "
                       "statement gives when the call runs it (the value it assigns, or "
                       "the value of the call it makes).")
    intro = ("Below is a {language} function and a call to it. Follow the call from the start "
             "of the function through its first statements (every statement executed "
             "counts, a loop header each time it is reached) and say which local variables "
             "then hold a value different from the one they had when the call began "
             "(including variables created by then), and what those values are.")
    answer_format = MAPPING
    nothing = "its first statements change no local variable"

    @classmethod
    def _valid(cls, record: JSONObject) -> bool:
        return (isinstance(record.get("lines"), list) and isinstance(record.get("after"), dict)
                or isinstance(record.get("line"), int) and not isinstance(record["line"], bool)
                and isinstance(record.get("statement"), str)
                and isinstance(record.get("value"), list))

    @property
    def published(self) -> bool:
        return "after" not in self.record

    @property
    def introduction(self) -> str:
        return (self.published_intro if self.published else self.intro).format(
            language=self.language.name)

    @property
    def format_line(self) -> str:
        chosen = CONCRETE if self.published else self.answer_format
        return chosen.format(value_format=self.language.value_format)

    @classmethod
    def derive(cls, function: Function, entry_point: str, trace: Trace,
               max_block: int) -> list[JSONObject]:
        return [fact.to_record() for fact in
                derive.block_facts(function, _entry_states(function, entry_point, trace),
                                   max_block)]

    @property
    def asked(self) -> Encoded:
        if self.published:
            return list_of(self.record, "value")
        return ["dict", [[["str", name], value]
                         for name, value in object_of(self.record, "after").items()]]

    @property
    def kind(self) -> str:
        return f"block-{self.record['size']}"

    @property
    def variant(self) -> str:
        return f"k{self.record['size']}"

    def question(self, call: str) -> str:
        if self.published:
            return (f"Call: {call}\n\nStatement ({_where(self.record)}):\n"
                    f"{self.record['statement']}\n\nWhat value does the statement give?")
        lines = ", ".join(map(str, list_of(self.record, "lines")))
        return (f"Call: {call}\n\nWhich local variables differ from their values at the "
                f"start of the call once the first {self.record['size']} statement(s) have "
                f"run (lines {lines}, in that order), and what are their values?")

    def read_answer(self, text: str) -> Encoded:
        return self.language.read(text) if self.published else read_mapping(text)


class LoopFact(Fact):
    task = "loop"
    fields = {"line": int, "question": str, "value": list}
    intro = ("Below is a {language} function and a call to it. The question is about the loop "
             "on the given line, the first time the call reaches it (that one run of the "
             "loop, until execution leaves it).")
    nothing = "no loop of the function ran to its end"

    @classmethod
    def _valid(cls, record: JSONObject) -> bool:
        question = record["question"]
        return question in ("iterations", "body", "after") and (
            question == "iterations" or isinstance(record.get("variable"), str)) and (
                question != "body" or isinstance(record.get("iteration"), int))

    @classmethod
    def derive(cls, function: Function, entry_point: str, trace: Trace,
               max_block: int) -> list[JSONObject]:
        return [fact.to_record() for fact in
                derive.loop_facts(function, _entry_states(function, entry_point, trace))]

    @property
    def kind(self) -> str:
        return text_of(self.record, "question")

    @property
    def variant(self) -> str:
        line, question = self.record["line"], self.record["question"]
        if question == "body":
            return f"L{line}-{self.record['variable']}-{self.record['iteration']}"
        if question == "after":
            return f"L{line}-{self.record['variable']}-after"
        return f"L{line}-iterations"

    def question(self, call: str) -> str:
        variable = self.record.get("variable")
        asked = {"iterations": "How many times does the body of this loop run?",
                 "body": self._body_question(),
                 "after": f"What is the value of `{variable}` just after execution leaves "
                          "this loop?"}[self.kind]
        if str(variable).startswith("@py_assert"):
            asked += (f" (`{variable}` is a temporary that pytest's assertion rewriting adds "
                      "for an `assert` line, holding a value the assertion computes.)")
        return f"Call: {call}\n\nLoop on line {self.record['line']}. {asked}"

    def _body_question(self) -> str:
        """A published in-loop fact counts the values its variable took at one line
        (``at``), not the loop's iterations: a line inside the body may run several times
        per iteration, or not at all, so the question names that line."""
        variable = self.record.get("variable")
        iteration = self.record.get("iteration")  # asked of every loop fact's prompt
        nth = _ordinal(iteration if isinstance(iteration, int) else 0)
        if "at" in self.record:
            return (f"What is the value of `{variable}` just after line {self.record['at']} "
                    f"has run for the {nth} time?")
        return (f"What is the value of `{variable}` at the end of the {nth} iteration of "
                "this loop?")


class YesNoFact(Fact):
    """A question answered yes or no."""

    answer_format = YES_NO

    def answer_text(self, value: Encoded) -> str:
        return "yes" if value[1] else "no"

    def read_answer(self, text: str) -> Encoded:
        said = read_yes_no(text)
        if said is None:
            raise LiteralError("not yes or no")
        return ["bool", said]


class BranchFact(YesNoFact):
    task = "branch"
    fields = {"line": int, "executed": bool}
    intro = ("Below is a {language} function and a call to it. Say whether the given line is "
             "executed at any point during the call (in any call of the function the call "
             "makes, recursive ones included).")
    nothing = "the function has no block that runs only on some paths"

    @classmethod
    def derive(cls, function: Function, entry_point: str, trace: Trace,
               max_block: int) -> list[JSONObject]:
        return [fact.to_record() for fact in derive.branch_facts(function, trace)]

    @property
    def asked(self) -> Encoded:
        return ["bool", self.record["executed"]]

    def question(self, call: str) -> str:
        return f"Call: {call}\n\nIs line {self.record['line']} executed during this call?"


class AliasFact(YesNoFact):
    """CodeSense's pointer property, from its C file only (a trace of ours records no
    addresses): ``first`` and ``second`` each name a ``pointer``, its ``statement`` and the
    ``lines`` holding it (none when the statement is in another function, a caller), and
    ``aliased`` says whether the two refer to the same memory."""

    task = "alias"
    fields = {"first": dict, "second": dict, "aliased": bool}
    intro = ("Below is a {language} function and the inputs of one call to it (pointers are "
             "shown by the values they point to; addresses are left out). Two pointers are "
             "named, each as it is when a given statement runs during the call. Say whether "
             "they point to the same memory.")
    nothing = "alias questions come only from published C records"

    @classmethod
    def _valid(cls, record: JSONObject) -> bool:
        first, second = record["first"], record["second"]
        return all(isinstance(part, dict) and isinstance(part.get("pointer"), str)
                   and isinstance(part.get("statement"), str)
                   and isinstance(part.get("lines"), list)
                   for part in (first, second)) \
            and isinstance(first, dict) and bool(first["lines"])

    @classmethod
    def derive(cls, function: Function, entry_point: str, trace: Trace,
               max_block: int) -> list[JSONObject]:
        return []

    @property
    def asked(self) -> Encoded:
        return ["bool", self.record["aliased"]]

    @property
    def variant(self) -> str:
        return "alias"

    def question(self, call: str) -> str:
        def named(key: str) -> str:
            part = object_of(self.record, key)
            lines = list_of(part, "lines")
            where = (f"line {' or '.join(map(str, lines))}" if lines
                     else "a statement in another function, not shown")
            return f"`{part['pointer']}` when `{part['statement']}` runs ({where})"
        return (f"Call: {call}\n\nPointer A: {named('first')}.\nPointer B: "
                f"{named('second')}.\n\nDo A and B point to the same memory?")



class OutputFact(Fact):
    """The value a call returns: the output task's question in CodeSense's style, asked
    with abstract values (its record is empty; the output task keeps the value itself)."""

    task = "output"
    intro = ("Below is a {language} function together with a call to it. Work out what the "
             "call returns by following the code step by step.")

    @property
    def direct_introduction(self) -> str:
        return (f"Below is a {self.language.name} function together with a call to it. Say "
                "what the call returns.")

    def question(self, call: str) -> str:
        return f"Call: {call}\n\nWhat does the call return?"


class InputsFact(Fact):
    """The inputs of a recorded call, asked from its output: CodeSense's input prediction
    on C and Java, where nothing can be run, so an answer is checked against the inputs
    the record publishes (``names``: the parameters asked for; ``output``: the returned
    value's text). One parameter may be answered by its value alone."""

    task = "input"
    fields = {"names": list, "output": str}
    intro = ("Below is a {language} function and the value one call of it returned. Work "
             "out the values the named parameters had in that call. The function is not "
             "run to check an answer: it is compared with the inputs recorded for that "
             "call.")
    answer_format = ("Write the answer as {{name = value, ...}}, one entry per parameter "
                     "asked for (a single parameter may be given by its value alone). "
                     "{value_format} " + PUT)

    def question(self, call: str) -> str:
        names = ", ".join(f"`{name}`" for name in list_of(self.record, "names"))
        return (f"The call returned: {self.record['output']}\n\nWhat were the values of "
                f"{names}?")

    def read_answer(self, text: str) -> Encoded:
        value = self.language.read(text)
        names = list_of(self.record, "names")
        if value[0] != "dict" and len(names) == 1:  # `v` or `name = v`: under the name it gives
            name = assigned_name(text)
            return ["dict", [[["str", name or names[0]], value]]]
        return value


def facts_for(kind: type[Fact], code: str, entry_point: str, trace: Trace,
              max_block: int = 3) -> list[JSONObject]:
    """The call's facts of ``kind`` (records, not yet checked): the given ones if the trace
    brings facts, else those derived from its run. Raises ``NoFacts`` when neither is
    possible."""
    given = trace.extra.get("facts")
    if given is not None:
        if not isinstance(given, list):
            raise NoFacts("the recorded trace's 'facts' is not a list")
        return [fact for fact in given if isinstance(fact, dict) and fact.get("task") == kind.task]
    if trace.status not in ("ok", "exception"):
        raise NoFacts(f"the call did not run to its end ({trace.status})")
    function = analyse(code, entry_point)
    if function is None:
        raise NoFacts(f"no top-level function {entry_point!r} in the code")
    return kind.derive(function, entry_point, trace, max_block)
