"""The compiled .arena grammar: one lark LALR parser per process, and its lexer for the formatter.

Contract: `lark_parser()` parses whole files (start rule `start`) and single predicates
(`comparison`). The grammar is package data (`arenac.grammar/arena.lark`); the units of its
QUANTITY terminal are written in from `core/units.py` (`grammar_text`), the one list of unit
spellings (the file spells them too, the same, for tools that read it alone: a test keeps the two
equal). `every_token(text)` is every token of a file in order, those the grammar ignores (blanks,
comments) included, by the grammar's own terminals. This module knows nothing of diagnostics or
trees; the parser, the friendly syntax errors and the formatter build on it.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from importlib import resources
from typing import Any

import lark
from lark import Lark, Token, Tree
from lark.lexer import BasicLexer, LexerThread
from lark.parsers import lalr_analysis

from arenac.core.cache import Fingerprint, cached
from arenac.core.units import UNIT_ALTERNATION

# the QUANTITY terminal up to its unit group, as arena.lark spells it (the units follow, then `)`)
_QUANTITY_HEAD = "QUANTITY.2: /\\d+(\\.\\d+)?("


def written_units(grammar: str) -> str:
    """The unit alternation the grammar text spells in its QUANTITY terminal (`ms|Ki|...`)."""
    _, found, rest = grammar.partition(_QUANTITY_HEAD)
    if not found:
        raise ValueError("the grammar has no QUANTITY terminal of the form arenac/syntax/grammar.py expects")
    return rest.partition(")")[0].replace("\\/", "/")


def grammar_text() -> str:
    """arena.lark, with its QUANTITY terminal's units written from `core/units.py`."""
    grammar = resources.files("arenac.grammar").joinpath("arena.lark").read_text(encoding="utf-8")
    written = written_units(grammar).replace("/", "\\/")
    derived = UNIT_ALTERNATION.replace("/", "\\/")  # a lark regex is delimited by `/`
    return grammar.replace(_QUANTITY_HEAD + written + ")", _QUANTITY_HEAD + derived + ")", 1)


_OPTIONS: dict[str, Any] = dict(parser="lalr", propagate_positions=True, maybe_placeholders=True,
                                start=["start", "comparison"])


@functools.lru_cache(maxsize=1)
def lark_parser() -> Lark:
    """The parser as lark builds it, kept pickled between processes in the per-user cache
    (arenac/core/cache.py) under the grammar's text, the options and lark's version: loading it
    there costs a fifth of rebuilding it from lark's own cache (which saves building the LALR
    tables, and which a miss still uses). `arenac check` is meant to be fast. Kept as built,
    before any parse: each state's lexer still compiles its regular expressions when first used."""
    grammar = grammar_text()

    def key() -> str:
        fingerprint = Fingerprint()
        fingerprint.add("lark", repr((lark.__version__, sorted(_OPTIONS.items()))).encode())
        fingerprint.add("grammar", grammar.encode())
        return fingerprint.hexdigest()

    # the parse table's actions, which lark's parser compares by identity
    singletons: dict[str, object] = {"Shift": lalr_analysis.Shift, "Reduce": lalr_analysis.Reduce}
    parser: Lark = cached("parser", key, lambda: _built(grammar), singletons)
    return parser


def _built(grammar: str) -> Lark:
    try:
        return Lark(grammar, cache=True, **_OPTIONS)
    except OSError:  # an unwritable temp directory only costs start-up time
        return Lark(grammar, **_OPTIONS)


def parse_file_tree(text: str) -> Tree[Token]:
    """The lark tree of a whole file; raises lark's UnexpectedInput on a syntax error."""
    return lark_parser().parse(text, start="start")


def every_token(text: str) -> Iterator[Token]:
    """Every token of `text` in order, covering it whole: the grammar's terminals, with the ignored
    ones (blanks, `COMMENT`) kept. The file-level lexer, not the parser's contextual one: a keyword
    is its own terminal (`TASK`) wherever it stands, which a layout never needs to tell apart."""
    lexer = _lexer_keeping_ignored()
    state = LexerThread.from_text(lexer, text).state  # a fresh scan of `text`, as `Lark.lex` starts one
    assert state is not None
    return _signs_after_operands(lexer.lex(state, None), ignored_terminals())


# what a value ends with: after one of these, `-2` is a subtraction, as the parser reads it
_OPERAND_ENDS = frozenset({"NUMBER", "QUANTITY", "RPAR", "NAME", "STRING"})


def _signs_after_operands(tokens: Iterator[Token], ignored: frozenset[str]) -> Iterator[Token]:
    """A signed number (`-2`) right after an operand is the parser's `- 2` (its contextual lexer
    expects an operator there): split it the same way, so a layout spaces it as a subtraction."""
    previous = ""
    for token in tokens:
        if token.type == "NUMBER" and token.value.startswith("-") and previous in _OPERAND_ENDS:
            assert token.line is not None and token.column is not None and token.start_pos is not None
            yield Token("ADD_OP", "-", start_pos=token.start_pos, line=token.line, column=token.column,
                        end_line=token.line, end_column=token.column + 1, end_pos=token.start_pos + 1)
            yield Token("NUMBER", token.value[1:], start_pos=token.start_pos + 1, line=token.line,
                        column=token.column + 1, end_line=token.end_line, end_column=token.end_column,
                        end_pos=token.end_pos)
        else:
            yield token
        if token.type not in ignored:
            previous = token.type


@functools.lru_cache(maxsize=1)
def _lexer_keeping_ignored() -> BasicLexer:
    """What `Lark.lex(text, dont_ignore=True)` builds at every call, built once (its scanner, the
    terminals' regexes, is compiled at the first use)."""
    conf = copy.copy(lark_parser().lexer_conf)
    conf.ignore = ()
    return BasicLexer(conf)


@functools.lru_cache(maxsize=1)
def ignored_terminals() -> frozenset[str]:
    """The names of the terminals the grammar ignores (`%ignore`): blanks and `COMMENT`."""
    return frozenset(lark_parser().lexer_conf.ignore)


@functools.lru_cache(maxsize=1)
def keyword_terminals() -> frozenset[str]:
    """The names of the terminals that are words (`TASK`, `GATE`, `WITHIN`, ...)."""
    return frozenset(t.name for t in lark_parser().terminals
                     if t.pattern.type == "str" and t.pattern.value.isidentifier())
