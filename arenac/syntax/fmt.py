"""Canonical formatting of .arena source (`arenac fmt`): `format_source(text) -> text`.

The contract:

- Input that does not parse is never formatted: `format_source` raises the parser's
  `DiagnosticError` unchanged.
- The output parses to the same syntax tree as the input (spans aside), and formatting
  is idempotent: `format_source(format_source(x)) == format_source(x)`.
- Line structure is kept: every token stays on the line it was written on, comments
  (full-line and trailing) stay in place, triple-quoted strings are kept byte for byte.
- Indentation is two spaces per open `{`; a line starting with `}` dedents first.
- Tokens on a line are joined with one space, except: none inside `(` `)` `[` `]`,
  none before `,` `:` `)` `]` `[` or the `(` of a call, none around `.` and around
  the `/` of `pods/log`. A trailing comment is preceded by two spaces. (Quantities
  such as `40/s` and paths such as `/admin/config` are single tokens, kept as written.)
- Trailing whitespace is removed (not inside triple strings, whose text is content),
  runs of blank lines become one, there is no blank line at the start, right after a
  line opening a block or right before a `}`, and the file ends with exactly one
  newline. CRLF becomes LF everywhere, as reading a file in text mode already does.

The formatter reads the text with the grammar's own lexer (`syntax/grammar.every_token`: the
terminals of arena.lark, blanks and comments included), so it tokenizes exactly as the parser
does; the input has been parsed first, so it only ever sees valid token sequences. A newline
token (`_NL`) carries the blank and comment-only lines after it, which the formatter splits
back into lines. Keywords are contextual in the grammar, so the few spacing choices that depend
on a keyword (`guard (a) <= 1`, `onset = when (a) > 1`, `guard a == 0 or (b)`, where `(` groups
rather than calls) look at the word's position on the line.
"""

from __future__ import annotations

from arenac.core.source import SourceFile
from arenac.syntax.grammar import every_token, ignored_terminals, keyword_terminals
from arenac.syntax.parser import parse

# the grammar's terminals that are words to the layout, by the kind it knows them as. A path is
# glued to what precedes it: `/admin/config`, and in `pods/log` the `/log` (a PATH) or, written
# apart, the `/` (the grammar's "/", which lark names SLASH; a lone `/` is lexed as it, not PATH)
_WORD_TERMINALS = {"COMMENT": "comment", "LONG_STRING": "long", "STRING": "string", "QUANTITY": "quantity",
                   "NUMBER": "number", "NAME": "name", "PATH": "path", "SLASH": "path"}
_GLUE_AFTER = frozenset({"(", "[", ".", "path"})
_GLUE_BEFORE = frozenset({")", "]", "[", ",", ":", "."})
_COMPARATORS = frozenset({"<=", ">=", "==", "!=", "<", ">"})

Line = list[tuple[str, str]]  # (kind, text): kind is a word kind above or the operator itself


def format_source(text: str, *, name: str = "<input>") -> str:
    """The canonical text of one .arena file; `name` is what diagnostics show."""
    text = text.replace("\r\n", "\n")
    parse(SourceFile(name, text))
    return _layout(_lines(text))


def _lines(text: str) -> list[Line]:
    """The source lines as tokens (blanks dropped); a blank line is an empty list."""
    lines: list[Line] = [[]]
    keywords, ignored = keyword_terminals(), ignored_terminals()
    for token in every_token(text):
        kind = "name" if token.type in keywords else _WORD_TERMINALS.get(token.type)
        if token.type == "_NL":  # `\n`, then per line its indentation and maybe a comment-only line
            for line in token.value.split("\n")[1:]:
                lines.append([("comment", line.strip())] if line.strip() else [])
        elif kind == "comment":
            lines[-1].append((kind, token.value.rstrip()))
        elif kind is not None:
            lines[-1].append((kind, token.value))
        elif token.type not in ignored:
            lines[-1].append((token.value, token.value))
    return lines


def _layout(lines: list[Line]) -> str:
    out: list[str] = []
    depth = 0
    pending_blank = False
    after_open = False
    for line in lines:
        if not line:
            pending_blank = bool(out)
            continue
        kinds = [kind for kind, _ in line]
        closing = 1 if kinds[0] == "}" else 0  # `} }` (possible after access, load and macro) dedents once
        if pending_blank and not after_open and not closing:
            out.append("")
        pending_blank = False
        out.append("  " * max(depth - closing, 0) + _join(line))
        depth += kinds.count("{") - kinds.count("}")
        code = [kind for kind in kinds if kind != "comment"]
        after_open = bool(code) and code[-1] == "{"
    return "\n".join(out) + "\n" if out else ""


def _join(line: Line) -> str:
    parts = [line[0][1]]
    for index in range(1, len(line)):
        parts.append(_space(line, index))
        parts.append(line[index][1])
    return "".join(parts)


def _space(line: Line, index: int) -> str:
    """The blank between `line[index - 1]` and `line[index]`."""
    previous, kind = line[index - 1][0], line[index][0]
    if kind == "comment":
        return "  "
    if kind == "path":
        return " " if previous in (",", ":") else ""
    if previous in _GLUE_AFTER or kind in _GLUE_BEFORE:
        return ""
    if kind == "(" and previous == "name":
        return " " if _is_keyword(line, index - 1) else ""
    return " "


def _is_keyword(line: Line, index: int) -> bool:
    """Whether the word before a `(` is `guard`, `when`, or a guard's `and`/`or`, as keywords
    (then `(` groups). After a guard's comparison the grammar takes only `and`/`or` there, never a
    call, so on a guard line the two words are always the keywords."""
    word = line[index][1]
    if word == "guard":
        return index == 0
    if word in ("and", "or"):
        return line[0][1] == "guard" and index > 0
    texts = [text for _, text in line]
    return word == "when" and index == 2 and texts[:2] == ["onset", "="] and bool(_COMPARATORS & set(texts))
