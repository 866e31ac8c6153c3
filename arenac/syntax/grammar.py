"""The compiled .arena grammar: one lark LALR parser per process.

Contract: `lark_parser()` parses whole files (start rule `start`) and single predicates
(`comparison`). The grammar is package data (`arenac.grammar/arena.lark`). This module knows
nothing of diagnostics or trees; the parser and the friendly syntax errors both build on it.
"""

from __future__ import annotations

import functools
from importlib import resources

from lark import Lark, Token, Tree


@functools.lru_cache(maxsize=1)
def lark_parser() -> Lark:
    """lark's own cache (keyed by a hash of grammar and options, in the temp directory) saves
    building the LALR tables at every start; `arenac check` is meant to be fast."""
    grammar = resources.files("arenac.grammar").joinpath("arena.lark").read_text(encoding="utf-8")
    options = dict(parser="lalr", propagate_positions=True, maybe_placeholders=True, start=["start", "comparison"])
    try:
        return Lark(grammar, cache=True, **options)
    except OSError:  # an unwritable temp directory only costs start-up time
        return Lark(grammar, **options)


def parse_file_tree(text: str) -> Tree[Token]:
    """The lark tree of a whole file; raises lark's UnexpectedInput on a syntax error."""
    return lark_parser().parse(text, start="start")
