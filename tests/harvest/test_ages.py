"""A function's normalised tree: what leaves it unchanged (moving, re-indenting, comments,
docstrings) and what does not (any change of code, decorators or name)."""

from __future__ import annotations

from execbench.harvest.ages import fingerprint

BASE = '''\
def area(width, height):
    """The area."""
    if width < 0:
        return 0
    return width * height
'''


def test_layout_comments_and_docstrings_do_not_count() -> None:
    same = '''\
def area(width,
         height):  # reflowed
    # no docstring now
    if width < 0: return 0
    return (width * height)
'''
    nested = '''\
def area(width, height):
    def helper():
        """Its docstring goes too."""
        return 1
    return width * height
'''
    assert fingerprint(same) == fingerprint(BASE)
    assert fingerprint(nested) == fingerprint(
        nested.replace('        """Its docstring goes too."""\n', ""))


def test_changes_of_code_decorators_or_name_count() -> None:
    for changed in (BASE.replace("< 0", "<= 0"), "@cache\n" + BASE,
                    BASE.replace("def area", "def surface"),
                    BASE.replace("return 0", "return 0.0")):
        assert fingerprint(changed) != fingerprint(BASE), changed


def test_a_text_that_does_not_parse_is_compared_as_text() -> None:
    assert fingerprint("  def f(:\n") == "def f(:"
