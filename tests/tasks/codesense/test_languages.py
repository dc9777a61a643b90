"""Questions about C and Java code: prompts name the language and show values as the
debuggers print them; answers are read with the debuggers' reader, never run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks.asking import ask
from execbench.tasks.base import CORRECT, INCORRECT, UNPARSABLE, Instance
from execbench.tasks.protocol import Protocol
from execbench.tasks.registry import get_task

C_CODE = "char\nfirst(const char *s, int *n)\n{\n\tchar c = s[0];\n\t*n = 1;\n\treturn c;\n}"


def _suite(tmp_path: Path, records: list[dict[str, Any]]) -> list[Instance]:
    source = tmp_path / "records.jsonl"
    source.write_text("".join(json.dumps(record) + "\n" for record in records))
    build_suite([str(source)], tmp_path / "suite", BuildOptions(tasks=None, workers=1))
    return load_suite(tmp_path / "suite")[1]


def _verdict(instance: Instance, answer: str) -> tuple[str, bool]:
    score = get_task(instance.task).judging.score(instance, f"<ans>{answer}</ans>", None)
    return score.verdict, score.extra["string_match"]


@pytest.fixture
def statement(tmp_path: Path) -> Instance:
    (instance,) = _suite(tmp_path, [{
        "idx": 0, "Programming Language": "C", "Statement Type": "Assignment",
        "Source Code": C_CODE, "Selected Statement": "char c = s[0];",
        "Function Input": {"s": {"value": '0x4005f0 "Ab"'}},
        "Variable Values Before Statement": {"s": '0x4005f0 "Ab"'},
        "Value After Statement Execution": "65 'A'"}])
    return instance


def test_a_c_statement_prompt_speaks_c(statement: Instance) -> None:
    prompt = ask(get_task("statement"), statement, Protocol(shots=3))[0]["content"]
    assert prompt.startswith("Below is a C function")
    assert "[C]\n1  char\n" in prompt and "[PYTHON]" not in prompt
    assert "as GDB prints it" in prompt
    assert 'Values just before it runs: s = "Ab"' in prompt      # the address left out
    assert "Example:" not in prompt       # the worked examples are Python: none for C


@pytest.mark.parametrize(("answer", "verdict", "string"), [
    ("65 'A'", CORRECT, True),            # GDB's own form, as published
    ("65", CORRECT, False),               # the code alone
    ("'A'", CORRECT, False),              # the glyph alone
    ("c = 'A';", CORRECT, False),         # the statement's own form
    ("66", INCORRECT, False),
    ("65 'B'", UNPARSABLE, False),        # a code and a glyph that disagree
    ("__import__('os')", UNPARSABLE, False),
])
def test_a_character_answer_in_any_of_its_forms(statement: Instance, answer: str,
                                                verdict: str, string: bool) -> None:
    assert _verdict(statement, answer) == (verdict, string)
    assert get_task("statement").asking.reference_response(statement) == \
        "[ANSWER]\n65 'A'\n[/ANSWER]"


def test_alias_questions(tmp_path: Path) -> None:
    records = [{"idx": i, "Programming Language": "C", "Source Code": C_CODE,
                "Selected Statement": "\t*n = 1;  // set it\n", "Selected Pointer": "n",
                "Compared Statement": "char c = s[0];", "Compared Pointer": "s",
                "Aliasing": answer, "Function Input": {}} for i, answer in enumerate(["No",
                                                                                     "Yes"])]
    no, yes = _suite(tmp_path, records)
    prompt = ask(get_task("alias"), no, Protocol(shots=0))[0]["content"]
    assert "Pointer A: `n` when `*n = 1;` runs (line 5)." in prompt
    assert "Pointer B: `s` when `char c = s[0];` runs (line 4)." in prompt
    assert _verdict(no, "no") == (CORRECT, True)
    assert _verdict(no, "Yes") == (INCORRECT, False)
    assert _verdict(yes, "yes.") == (CORRECT, False)   # the string comparison is stricter
    assert _verdict(yes, "maybe")[0] == UNPARSABLE


def test_java_outputs_and_published_inputs(tmp_path: Path) -> None:
    code = ("    public String greet(String name, int times) {\\n        return \\\"hi \\\" + "
            "name;\\n    }")
    output, inputs = sorted(_suite(tmp_path, [{
        "idx": 0, "code": code, "cyclomatic_complexity": 1, "code_length": 3,
        "category": "Easy",
        "basic_input": [{"name": "name", "type": "java.lang.String", "value": "bo"},
                        {"name": "times", "type": "int", "value": "2"}],
        "output": [{"name": "unknown", "type": "java.lang.String", "value": "hi bo"}]}]),
        key=lambda instance: instance.task, reverse=True)
    assert output.language == inputs.language == "java"
    prompt = ask(get_task("output"), output, Protocol(shots=0))[0]["content"]
    assert "[JAVA]" in prompt and "as JDB prints it" in prompt
    assert 'greet(name = "bo", times = 2)' in prompt
    assert _verdict(output, '"hi bo"') == (CORRECT, True)
    assert _verdict(output, '"hi  bo"')[0] == INCORRECT
    prompt = ask(get_task("input"), inputs, Protocol(shots=0))[0]["content"]
    assert "The call returned: hi bo" in prompt and "`name`, `times`" in prompt
    assert _verdict(inputs, '{times = 2, name = "bo"}')[0] == CORRECT   # any order
    assert _verdict(inputs, '{name = "bo", times = 3}')[0] == INCORRECT
    assert _verdict(inputs, '"bo"')[0] == INCORRECT       # one value for two parameters
    assert _verdict(inputs, "{'name': 'bo', 'times': 2}")[0] == UNPARSABLE


def test_one_input_may_be_answered_by_its_value(tmp_path: Path) -> None:
    (_, inputs) = sorted(_suite(tmp_path, [{
        "idx": 0, "code": C_CODE, "input": "{'s': 'NULL', 'n': '0x10'}",
        "basic_input": "{'n': {'type': 'int', 'value': '3'}}", "code_length": 5,
        "output": "{'type': 'char', 'value': '65'}", "cyclomatic_complexity": 1}]),
        key=lambda instance: instance.task, reverse=True)
    assert inputs.task == "input"
    assert _verdict(inputs, "3")[0] == CORRECT
    assert _verdict(inputs, "{n = 3}")[0] == CORRECT
    assert _verdict(inputs, "4")[0] == INCORRECT
    assert _verdict(inputs, "n = 3;")[0] == CORRECT
    assert _verdict(inputs, "s = 3")[0] == INCORRECT      # the value, but of another name
    assert _verdict(inputs, "n = 1" + " " * 5000 + "@")[0] == UNPARSABLE   # and at once
