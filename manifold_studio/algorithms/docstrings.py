"""Numpydoc for algorithm classes, with the parameter help written once: in the constraints.

When an algorithm class's docstring has no ``Parameters`` section, :func:`with_parameters`
generates one from ``cls.params`` (each constraint's allowed values, default and help text) and
puts it after the summary, before the first other section (Attributes, Examples, ...). A class
that writes its own ``Parameters`` section is checked instead (tests call
:func:`documented_parameters` and compare with the constraints), so the two cannot drift apart.
"""
from __future__ import annotations

import re
import textwrap

_SECTION = re.compile(r"^(?P<indent>[ \t]*)(?P<title>[A-Z][A-Za-z ]+)\n(?P=indent)-{3,}[ \t]*$", re.M)
_TYPE_WORDS = {"Int": "int", "Float": "float", "Bool": "bool", "Choice": "str", "IntTuple": "tuple of int"}
_PARAM_LINE = re.compile(r"^(?P<names>[A-Za-z_]\w*(\s*,\s*[A-Za-z_]\w*)*)\s*:")


def _indent_of(doc: str) -> str:
    lines = [ln for ln in doc.splitlines()[1:] if ln.strip()]
    return min((re.match(r"[ \t]*", ln).group(0) for ln in lines), key=len, default="    ")


def parameters_section(params, indent: str = "    ") -> str:
    """The numpydoc ``Parameters`` section for a sequence of constraints."""
    lines = ["Parameters", "----------"]
    for p in params:
        kind = _TYPE_WORDS.get(type(p).__name__, "")
        lines.append(f"{p.name} : {kind + ' ' if kind else ''}{p.describe()}, default={p.default!r}")
        help_text = " ".join(str(p.help).split()) or p.display_name
        lines += textwrap.wrap(help_text, width=92, initial_indent="    ", subsequent_indent="    ")
    return "\n".join(indent + ln if ln else ln for ln in lines)


def with_parameters(doc: str | None, params) -> str | None:
    """``doc`` with a generated Parameters section when it has none (see the module docstring)."""
    if not doc or not params or any(m.group("title").strip() == "Parameters" for m in _SECTION.finditer(doc)):
        return doc
    indent = _indent_of(doc)
    section = parameters_section(params, indent)
    first = _SECTION.search(doc)
    if first is None:
        return doc.rstrip() + "\n\n" + section + "\n" + indent
    head = doc[:first.start()].rstrip() + "\n\n"
    return head + section + "\n\n" + doc[first.start():]


def documented_parameters(doc: str | None) -> list[str]:
    """The parameter names of a docstring's Parameters section, in order."""
    if not doc:
        return []
    sections = list(_SECTION.finditer(doc))
    for i, m in enumerate(sections):
        if m.group("title").strip() == "Parameters":
            end = sections[i + 1].start() if i + 1 < len(sections) else len(doc)
            body = textwrap.dedent(doc[m.end():end])
            return [name.strip() for ln in body.splitlines() if (pm := _PARAM_LINE.match(ln))
                    for name in pm.group("names").split(",")]
    return []
