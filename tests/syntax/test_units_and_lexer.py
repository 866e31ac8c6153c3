"""The unit list exists once (core/units.py's `UNITS`): the grammar's QUANTITY terminal is written
from it when arena.lark is loaded, the file's own spelling agrees with it, and the parser and
`parse_quantity` accept exactly its units. The formatter's tokens are the grammar's: `every_token`
covers a file whole, blanks and comments included, and refuses what the grammar cannot lex."""

from __future__ import annotations

from importlib import resources

import pytest
from lark.exceptions import UnexpectedInput

from arenac.core.units import UNIT_ALTERNATION, UNITS, parse_quantity
from arenac.syntax import grammar
from arenac.syntax.grammar import every_token, grammar_text, lark_parser, written_units
from helpers import ROOT

RAW = resources.files("arenac.grammar").joinpath("arena.lark").read_text(encoding="utf-8")
CORPUS = sorted([*ROOT.glob("library/**/*.arena"), *ROOT.glob("tasks/**/*.arena"),
                 *(ROOT / "tests" / "fmt_cases").glob("*.arena")])


def test_the_file_spells_the_units_of_core_units():
    assert written_units(RAW) == UNIT_ALTERNATION
    assert set(UNIT_ALTERNATION.split("|")) == set(UNITS)


def test_the_loaded_grammar_takes_its_units_from_core_units(monkeypatch):
    assert written_units(grammar_text()) == UNIT_ALTERNATION
    monkeypatch.setattr(grammar, "UNIT_ALTERNATION", "ms|s")  # what a shorter list would give
    assert written_units(grammar_text()) == "ms|s"
    assert written_units(RAW) != "ms|s"  # derived, not read from the file


def test_a_grammar_without_the_quantity_terminal_is_an_error():
    with pytest.raises(ValueError, match="no QUANTITY terminal"):
        written_units(RAW.replace("QUANTITY.2:", "AMOUNT.2:"))


@pytest.mark.parametrize("unit", sorted(UNITS))
def test_every_unit_is_a_quantity_to_the_parser_and_to_parse_quantity(unit):
    tree = lark_parser().parse(f"a <= 5{unit}", start="comparison")
    assert [token.type for token in tree.scan_values(lambda _: True) if token.type == "QUANTITY"] == ["QUANTITY"]
    assert parse_quantity(f"5{unit}").dimension == UNITS[unit][0]


@pytest.mark.parametrize("text", ["5x", "5Ti", "5/m"])
def test_a_unit_not_in_the_list_is_refused_by_both(text):
    with pytest.raises(UnexpectedInput):
        lark_parser().parse(f"a <= {text}", start="comparison")
    with pytest.raises(ValueError):
        parse_quantity(text)


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_token_covers_a_file_whole(path):
    text = path.read_text(encoding="utf-8")
    tokens = list(every_token(text))
    assert "".join(token.value for token in tokens) == text
    assert "_NL" in {token.type for token in tokens}


def test_every_token_keeps_blanks_and_comments():
    tokens = [(token.type, token.value) for token in every_token("x = 1  # why\n  # alone\n")]
    assert tokens[:5] == [("NAME", "x"), ("__IGNORE_0", " "), ("EQUAL", "="), ("__IGNORE_0", " "), ("NUMBER", "1")]
    assert tokens[5:] == [("__IGNORE_0", "  "), ("COMMENT", "# why"), ("_NL", "\n  # alone\n")]


def test_every_token_refuses_what_the_grammar_cannot_lex():
    with pytest.raises(UnexpectedInput):
        list(every_token("task t {\n  x = 1 ; 2\n}\n"))
