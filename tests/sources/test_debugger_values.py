"""Values as GDB and JDB print them, taken from CodeSense's C and Java files, read into
typed values; and malformed ones, each refused with one reason."""

from __future__ import annotations

import pytest

from execbench.sources.debugger_values import (
    AddressValue,
    Unreadable,
    read_java,
    read_record,
    read_text,
    show,
)
from execbench.values import LiteralError, equal, is_exact

# A struct as the aliasing file records an input (trimmed to three fields), verbatim.
DEC_NUMBER = {
    "type_category": "pointer", "concrete_type": "POINTER", "address": "0x7fffffffdb88",
    "value": {"type_category": "struct", "concrete_type": "STRUCT", "value": {
        "digits": {"type_category": "unknown", "concrete_type": "int32_t", "value": "1"},
        "bits": {"type_category": "unknown", "concrete_type": "uint8_t", "value": "32 ' '"},
        "lsu": {"type_category": "array", "concrete_type": "uint16_t", "value": [
            {"type_category": "unknown", "concrete_type": "uint16_t", "value": "0"}]}}}}


def test_a_struct_behind_a_pointer_is_its_fields_without_the_address() -> None:
    value = read_record(DEC_NUMBER)
    assert value == ["dict", [[["str", "digits"], ["int", 1]], [["str", "bits"], ["int", 32]],
                              [["str", "lsu"], ["list", [["int", 0]]]]]]
    assert show(value, "c") == "{digits = 1, bits = 32, lsu = {0}}"
    # the same struct as GDB prints it as text, fields in another order
    assert equal(read_text("{bits = 32 ' ', lsu = {0}, digits = 1}"), value)


@pytest.mark.parametrize(("text", "expected"), [
    ("32 ' '", ["int", 32]),           # GDB: the code, then the glyph
    ("1 '\\001'", ["int", 1]),
    ("' '", ["int", 32]),              # an answer may give the glyph alone
    ("'\\n'", ["int", 10]),
    ("0 '\\000'", ["int", 0]),
])
def test_a_character_is_its_code_written_either_way(text: str, expected: list) -> None:
    assert read_text(text) == expected


def test_a_character_whose_glyph_and_code_disagree_is_refused() -> None:
    with pytest.raises(LiteralError, match="is not code"):
        read_text("65 'B'")


@pytest.mark.parametrize(("text", "expected"), [
    ('0x72995f "example.com"', ["str", "example.com"]),   # a char * (the block file)
    ('0x1cbc950 ""', ["str", ""]),
    ('"tab\\there"', ["str", "tab\there"]),
    ('<_tjInitCompress.buffer> ""', ["str", ""]),          # a named buffer's contents
    ("NULL", ["none"]),
    ("0x0", ["none"]),
    ("-1", ["int", -1]),
    ("4294967295", ["int", 4294967295]),
    ("0x00010000UL", ["int", 65536]),                       # a constant, C suffix
    ("1.5", ["float", "1.5"]),
    ("1", ["int", 1]),
    ("1.0", ["int", 1]),       # GDB prints a double 1.0 as 1: numbers compare by value
    ("-nan(0x8000000000000)", ["float", "nan"]),
    ("true", ["bool", True]),
    ("{0 <repeats 3 times>, 7}", ["list", [["int", 0], ["int", 0], ["int", 0], ["int", 7]]]),
    ("{x = {a = 1}, y = NULL}", ["dict", [[["str", "x"], ["dict", [[["str", "a"], ["int", 1]]]]],
                                        [["str", "y"], ["none"]]]]),
])
def test_values_the_c_files_hold(text: str, expected: list) -> None:
    assert read_text(text) == expected


@pytest.mark.parametrize("text", [
    "0x55555564e5c0 <donothing>",                       # a pointer to a function
    "{void (int, const char *)} 0x55555564e5c0 <donothing>",
    "(struct quota *) 0x7fffffffdb88",
    "0x10be070",
])
def test_an_address_is_never_a_value(text: str) -> None:
    with pytest.raises(AddressValue):
        read_text(text)


@pytest.mark.parametrize("record", [
    "<optimized out>",
    "0x800000008 <error: Cannot access memory at address 0x800000008>",
    {"value": "<optimized out>"},
    {"type_category": "unknown", "concrete_type": "error", "error_type": "gdb.MemoryError"},
])
def test_what_the_debugger_could_not_read_is_unreadable(record: object) -> None:
    with pytest.raises(Unreadable):
        read_record(record)


def test_a_struct_with_an_unreadable_field_keeps_the_rest() -> None:
    """One field the debugger could not read stays as its published text: the value is
    shown, but it is not exact, so a question about it is judged by string comparison."""
    value = read_record({"value": {"type_category": "struct", "concrete_type": "STRUCT",
                                   "value": {"n": {"type_category": "int", "value": "3"},
                                             "p": {"type_category": "string",
                                                   "value": "0xd68 <error: Cannot access>"}}}})
    assert value[1][0] == [["str", "n"], ["int", 3]]
    assert value[1][1][1][0] == "object"
    assert not is_exact(value)


@pytest.mark.parametrize(("text", "why"), [
    ("{a = 1,", "expected"),
    ('"abc"...', "cut short"),
    ("{1, a = 2}", "mix"),
    ("int", "a name"),                     # the recorder wrote a type, not a value
    ("Dwarf_Bool", "a name"),
    ("1 2", "after the value"),
    ("{" * 60 + "}" * 60, "deeply"),
    ("{0 <repeats 20000 times>}", "more than"),
    ("@#!", "unexpected"),
])
def test_malformed_values_are_refused_with_one_reason(text: str, why: str) -> None:
    with pytest.raises(LiteralError, match=why):
        read_text(text)


@pytest.mark.parametrize(("raw", "type_name", "expected"), [
    ("1", "java.lang.String", ["str", "1"]),             # published bare
    ('"a b"', "java.lang.String", ["str", "a b"]),       # or quoted as JDB prints it
    ("", "java.lang.StringBuffer", ["str", ""]),
    ("-2942", "int", ["int", -2942]),
    ("6371.0", "double", ["int", 6371]),
    ("-3763.25168", "double", ["float", "-3763.25168"]),
    ("true", "boolean", ["bool", True]),
    (True, "boolean", ["bool", True]),                    # some values are JSON, not text
    (-1, "integer", ["int", -1]),
    (None, "java.lang.String", ["none"]),
    ("a", "char", ["int", 97]),
])
def test_java_values_by_their_type(raw: object, type_name: str, expected: list) -> None:
    assert read_java(raw, type_name) == expected


def test_a_java_object_reference_is_no_value() -> None:
    value = read_java('"com.ib.client.Contract@1"', "com.ib.client.Contract")
    assert value[0] == "object" and not is_exact(value)
    with pytest.raises(LiteralError):
        read_java("yes", "boolean")


def test_shown_values_read_back_as_themselves() -> None:
    for text in ['{digits = 1, name = "a\\"b\\n", inner = {1, 2}, p = NULL}', "-7", "true"]:
        value = read_text(text)
        assert read_text(show(value, "c")) == value
    assert show(["none"], "java") == "null"


@pytest.mark.parametrize("text", [
    "1" * 5000,                                  # past int()'s digit limit
    '"\\xffffffffff"', '"\\x110000"',            # no such character
    "1" * 20000 + "a",                           # a long run of digits, then junk
    "{" * 4 + "1 <repeats 100 times>}" + " <repeats 100 times>}" * 3,  # 10**8 leaves
    "{1 <repeats 999999999 times>}",
    " " * 100_000 + "x",
    "[" * 200 + "]" * 200,
])
def test_hostile_answers_are_refused_quickly_with_a_reason(text: str) -> None:
    """A model's answer is read with this reader: whatever it writes, the reader ends
    soon with a ``LiteralError``, never another exception or a huge value."""
    with pytest.raises(LiteralError):
        read_text(text)


def test_null_pointers_and_unrecorded_fields_never_show_the_recorders_own_records() -> None:
    assert read_record({"type_category": "pointer", "concrete_type": "NULL"}) == ["none"]
    value = read_record({"type_category": "struct", "value": {
        "key": None, "func": {"type_category": "pointer", "concrete_type": "POINTER",
                              "address": "0x1056ca0"},
        "n": {"type_category": "unknown", "concrete_type": "error",
              "error_type": "gdb.MemoryError", "stacktrace": "Traceback ..."}}})
    assert show(value, "c") == "{key = <not recorded>, func = <an address>, n = <not recorded>}"
    assert read_text('["dot", "-V"]') == ["list", [["str", "dot"], ["str", "-V"]]]
    assert read_text('"\\u0041BC"') == ["str", "ABC"]   # \u takes four digits
