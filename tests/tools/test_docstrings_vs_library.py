"""Our docstring parser beside docstring-parser: the same answers where both are right, and a table of each
place ours differs on purpose, with the reason (a schema needs parameter names that match the signature)."""

from __future__ import annotations

import docstring_parser
import pytest

from hermes_nb.tools.schema.docstrings import parse_docstring


def _library(doc: str) -> tuple[str, dict[str, str]]:
    parsed = docstring_parser.parse(doc)
    description = "\n\n".join(x for x in (parsed.short_description, parsed.long_description) if x)
    return description, {p.arg_name: " ".join(p.description.split()) for p in parsed.params if p.description}


AGREE = {
    "google": "Add.\n\nArgs:\n    a (int): The first.\n        Continues.\n    b: The second.\n\nReturns:\n    Sum.",
    "numpy": "Add.\n\nParameters\n----------\na : int\n    The first.\nb : float\n    The second.",
    "rest": "Add.\n\n:param a: The first.\n:param int b: The second,\n    continued.\n:returns: sum",
    "epydoc": "Greet.\n\n@param name: Who.\n@return: a greeting",
    "attributes": "A point.\n\nAttributes:\n    x: Horizontal.\n    y: Vertical.",
    "colon in text": "Fetch.\n\nArgs:\n    url: e.g. https://x.org: a site.\n    timeout (float, optional): Seconds.",
}


@pytest.mark.parametrize("name", sorted(AGREE))
def test_same_answers_as_docstring_parser(name: str) -> None:
    doc = AGREE[name]
    ours = parse_docstring(doc)
    description, params = _library(doc)
    assert ours.params == params
    assert ours.description == description


# (docstring, what ours gives, what the library gives, why ours is what a tool schema needs)
DIFFER = [
    ("Search.\n\nArgs:\n    pattern: A regex.\n\n:param path: Where.",
     ("Search.", {"pattern": "A regex.", "path": "Where."}),
     ("Search.\n\nArgs:\n    pattern: A regex.", {"path": "Where."}),
     "styles mixed in one docstring: the library picks one style, drops `pattern` and leaks the section"),
    ("Collect.\n\nArgs:\n    *items: Things.\n    **options: Knobs.",
     ("Collect.", {"items": "Things.", "options": "Knobs."}),
     ("Collect.", {"*items": "Things.", "**options": "Knobs."}),
     "the schema's parameter names carry no stars"),
    ("Add.\n\nParameters\n----------\nb, c : float\n    Shared.",
     ("Add.", {"b": "Shared.", "c": "Shared."}),
     ("Add.", {"b, c": "Shared."}),
     "`b, c` is two parameters, not one named 'b, c'"),
    ("Just a description\nover two lines.",
     ("Just a description\nover two lines.", {}),
     ("Just a description\n\nover two lines.", {}),
     "a wrapped summary is one paragraph"),
]


@pytest.mark.parametrize(("doc", "ours", "library", "why"), DIFFER, ids=[row[3][:40] for row in DIFFER])
def test_where_ours_differs_on_purpose(doc: str, ours: tuple, library: tuple, why: str) -> None:
    parsed = parse_docstring(doc)
    assert (parsed.description, parsed.params) == ours, why
    assert _library(doc) == library, f"the library changed; revisit: {why}"
