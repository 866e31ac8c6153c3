"""Friendly syntax errors, and the small helpers every syntax module reports with.

Lark reports which terminals it expected; authors want to hear it in their words.
`EXAMPLES` maps known bad inputs to messages (matched by parser state), and the
fallback names what was found and what could have stood there. `single_error`,
`span_of` and `SHORT_GATE_MESSAGE` live here, below the parser and the transformer,
so that both can use them without importing each other.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.tree import Meta

from arenac.core.diagnostics import Diagnostic, DiagnosticError
from arenac.core.source import SourceFile, Span
from arenac.core.units import unknown_unit_hint
from arenac.syntax.grammar import parse_file_tree

# the one-line gate's rule, reported alike by the parser (E0118 at a syntax error) and the transformer
SHORT_GATE_MESSAGE = "a one-line gate is `gate NAME = MACRO(args)`: one gate macro call, nothing else"


def span_of(file: str, meta: Meta) -> Span:
    """The span of a lark tree node (its `meta`)."""
    return Span(file, meta.line, meta.column, meta.end_line, meta.end_column)


def single_error(code: str, message: str, span: Span | None, hint: str | None = None) -> DiagnosticError:
    return DiagnosticError([Diagnostic(code, message, span, hint)])

# digits, then a word: what the lexer cannot read when a quantity's unit is not one of UNITS
_NUMBER_AND_WORD = re.compile(r"(\d+(?:\.\d+)?)([A-Za-z%][A-Za-z0-9_%]*)")

# Terminal names as an author would call them.
_TERMINAL_WORDS = {
    "NAME": "a name",
    "STRING": "a string",
    "LONG_STRING": 'a """text block"""',
    "NUMBER": "a number",
    "QUANTITY": "a quantity such as 40s or 1%",
    "PATH": "an API path such as /admin/config",
    "COMPARATOR": "a comparison (<=, >=, ==, !=, <, >)",
    "_NL": "end of line",
    "$END": "end of file",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "EQUAL": "'='",
    "COMMA": "','",
    "COLON": "':'",
    "VBAR": "'|'",
    "DOT": "'.'",
    "SLASH": "'/'",
    "PLUS": "'+'",
    "ADD_OP": "'+' or '-'",
    "MUL_OP": "'*'",
}

# (code, message, hint, bad inputs): lark finds which example's parser state matches.
EXAMPLES: list[tuple[str, str, str | None, list[str]]] = [
    ("E0110", "a setting needs '=' between its name and its value", "write `title = \"...\"`",
     ['task t {\n  title "x"\n}\n', 'task t {\n  substrate spine\n}\n']),
    ("E0111", "unclosed block: '}' expected before the end of the file", "every '{' needs a matching '}'",
     ['task t {\n  title = "x"\n', 'task t {\n  gate outcome {\n  }\n']),
    ("E0112", "a fault is declared as `fault NAME = template(args)`",
     "e.g. `fault pool = spine.pool_size(service: message, size: 4)`",
     ['task t {\n  fault pool spine.pool_size()\n}\n', 'task t {\n  fault = spine.pool_size()\n}\n']),
    ("E0113", "an onset is `at start`, `after <duration>`, `every <d> offset <d> for <d>` or `when <predicate>`", None,
     ['task t {\n  fault f = a.b() {\n    onset = start\n  }\n}\n',
      'task t {\n  fault f = a.b() {\n    onset = after\n  }\n}\n',
      'task t {\n  fault f = a.b() {\n    onset = every 10s\n  }\n}\n']),
    ("E0114",
     "a gate statement is a comparison, or starts with survives, changes only, guard, protect, invariant or use", None,
     ['task t {\n  gate outcome {\n    error_rate(send)\n  }\n}\n',
      'task t {\n  gate outcome {\n    goodput\n  }\n}\n']),
    ("E0115", "an oracle step is `repair FAULT`, `wait until healthy within <d>`, `wait <d>` or `declare`", None,
     ['task t {\n  oracle {\n    fix pool\n  }\n}\n', 'task t {\n  oracle {\n    wait until healthy\n  }\n}\n']),
    ("E0116", "a call's arguments are separated by commas", None,
     ['task t {\n  fault f = a.b(x: 1 y: 2)\n}\n', 'task t {\n  fault f = a.b(x: n y: 2)\n}\n',
      'task t {\n  fault f = a.b(x: 1s y: 2)\n}\n', 'task t {\n  fault f = a.b(x: "s" y: 2)\n}\n']),
    ("E0117", "'recur' is written `recur = after declare` or `recur = after declare + <duration>`", None,
     ['task t {\n  fault f = a.b() {\n    recur = 60s\n  }\n}\n',
      'task t {\n  fault f = a.b() {\n    recur = after 60s\n  }\n}\n']),
    ("E0119", "a healthy setting is `config(SERVICE.KEY) = VALUE`, one value a line",
     'e.g. `config(redis.appendonly) = "yes"`',
     ['task t {\n  healthy {\n    appendonly = "yes"\n  }\n}\n',
      'task t {\n  healthy {\n    config(redis.appendonly) == "yes"\n  }\n}\n',
      'task t {\n  healthy {\n    config(redis.appendonly) = "yes" | "no"\n  }\n}\n',
      'task t {\n  healthy {\n    config(redis.appendonly) "yes"\n  }\n}\n']),
]


def describe_unexpected(error: UnexpectedInput, source: SourceFile, text: str) -> Diagnostic:
    line = getattr(error, "line", -1)
    column = getattr(error, "column", -1)
    if line is None or line < 1:  # unexpected end of input: point at the last line
        lines = text.rstrip("\n").split("\n")
        line, column = len(lines), len(lines[-1]) + 1
    width = 1
    token = getattr(error, "token", None)
    if token is not None and getattr(token, "type", "") not in ("$END", "_NL"):
        width = max(1, len(str(token)))
    span = Span.point(source.name, line, max(column, 1), width)

    short_gate = _short_gate_name(error)
    if short_gate is not None:
        return Diagnostic("E0118", SHORT_GATE_MESSAGE, span, _short_gate_hint(short_gate, error))

    matched = _matching_example(error)
    if matched is not None:
        code, message, hint = _by_code()[matched]
        return Diagnostic(code, message, span, hint or _expected_hint(getattr(error, "accepts", None)
                                                                      or getattr(error, "expected", None)))

    if isinstance(error, UnexpectedCharacters):
        position = error.pos_in_stream
        assert position is not None  # the lexer says where it stopped
        char = text[position] if position < len(text) else ""
        if char == '"':
            return Diagnostic("E0103", "unterminated string", span,
                              "close it with '\"' on the same line, or use \"\"\"...\"\"\"")
        unknown_unit = _unknown_unit(text, position, span)
        if unknown_unit is not None:
            return unknown_unit
        return Diagnostic("E0102", f"unexpected character {char!r}", span, _expected_hint(error.allowed))
    if isinstance(error, UnexpectedEOF):
        return Diagnostic("E0111", "unexpected end of file", span, _expected_hint(error.expected))
    if isinstance(error, UnexpectedToken):
        found = ("end of line" if error.token.type == "_NL"
                 else "end of file" if error.token.type == "$END" else f"'{error.token}'")
        return Diagnostic("E0101", f"unexpected {found}", span, _expected_hint(error.accepts or error.expected))
    return Diagnostic("E0101", "syntax error", span)


def _unknown_unit(text: str, position: int, at: Span) -> Diagnostic | None:
    """A number followed by letters the lexer stopped at: a quantity in a unit the language does not
    have (`512mb`), told with the units of its dimension (E0302), or None for anything else."""
    match = _NUMBER_AND_WORD.match(text, position)
    if match is None:
        return None
    number, unit = match.groups()
    return Diagnostic("E0302", f"unknown unit '{unit}' in {number}{unit}",
                      Span.point(at.file, at.line, at.column, len(number) + len(unit)), unknown_unit_hint(number, unit))


def _short_gate_name(error: UnexpectedInput) -> str | None:
    """The gate's name when `error` stopped a one-line gate (`gate NAME = ...`) at its top level.

    The parser's value stack still holds the tokens `gate`, NAME and `=` while that gate is
    unfinished (a finished one is reduced to a tree). A mistake inside a call's parentheses is
    left to the messages about calls.
    """
    state = getattr(error, "state", None)
    token = getattr(error, "token", None)
    stack = getattr(state, "value_stack", None)
    if not stack or token is None or token.type == "$END":
        return None
    types = [getattr(item, "type", None) for item in stack]
    for index in range(len(types) - 3, -1, -1):
        if types[index:index + 3] == ["GATE", "NAME", "EQUAL"]:
            return None if "LPAR" in types[index + 3:] else str(stack[index + 1])
    return None


def _short_gate_hint(name: str, error: UnexpectedInput) -> str:
    after = error.state.value_stack[-1]
    if getattr(after, "type", None) == "EQUAL":  # nothing after '='
        return f"e.g. `gate {name} = standard_outcome(route: send)`"
    return f"anything else goes in a block: `gate {name} {{`, one statement per line, then `}}`"


def _matching_example(error: UnexpectedInput) -> str | None:
    """The code of the first example that fails where `error` did, or None.

    "Where" is the LALR state the parser was in and the tokens it would have accepted, and
    whether the input had ended. (lark's own `match_examples` also compares the depth of the
    parser stack, which anything before the task, a comment line or a `use`, changes: it
    missed the mistake in almost every real file.)
    """
    if not isinstance(error, UnexpectedToken):
        return None  # the LALR parser's other errors carry no token it accepts
    state = getattr(error, "state", None)
    token = getattr(error, "token", None)
    if state is None or token is None or not hasattr(state, "position"):
        return None
    if token.type == "$END" and "RBRACE" in (error.accepts or ()):
        return "E0111"  # the file ends inside a block, whatever statement came last
    for code, failure in _example_failures():
        if (failure.state.position == state.position and failure.accepts == error.accepts
                and (failure.token.type == "$END") == (token.type == "$END")):
            return code
    return None


@functools.lru_cache(maxsize=1)
def _example_failures() -> tuple[tuple[str, UnexpectedToken], ...]:
    """(code, the UnexpectedToken its example raises), for every example, parsed once."""
    failures: list[tuple[str, UnexpectedToken]] = []
    for code, _message, _hint, examples in EXAMPLES:
        for example in examples:
            try:
                parse_file_tree(example)
            except UnexpectedToken as failure:
                failures.append((code, failure))
            except UnexpectedInput:  # an example the grammar rejects another way matches nothing
                pass
    return tuple(failures)


def _by_code() -> dict[str, tuple[str, str, str | None]]:
    return {code: (code, message, hint) for code, message, hint, _ in EXAMPLES}


def _expected_hint(expected: Iterable[str] | None) -> str | None:
    words = sorted({_TERMINAL_WORDS.get(name, _keyword(name)) for name in expected or ()})
    words = [w for w in words if w]
    if not words:
        return None
    if len(words) > 6:
        words = words[:6] + ["..."]
    return "expected " + ", ".join(words)


def _keyword(terminal: str) -> str:
    # Anonymous keyword terminals are named after their text in upper case (e.g. FAULT).
    if terminal.isupper() and terminal.isalpha():
        return f"'{terminal.lower()}'"
    return ""
