"""Property: no spec, however mangled, makes the front end raise anything but diagnostics."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arenac.core.diagnostics import DiagnosticError
from arenac.core.source import SourceFile
from arenac.pipeline import compile_sources
from helpers import ROOT

# the tasks, and the golden spec for the one-line gates and the default oracle
SEEDS = [p.read_text(encoding="utf-8") for p in sorted([*(ROOT / "tasks").glob("*.arena"),
                                                         *(ROOT / "tests" / "golden").glob("*/spec.arena")])]
FRAGMENTS = ["{", "}", "(", ")", "|", "=", ",", ":", "\n", '"', '"""', "#", "40s", "1%", "0", "-1", "1.5.0",
             "fault", "gate", "oracle", "access", "use", "repair", "layer", "onset", "every", "when", "within",
             "spine.", "baseline.", "config(", "table(", "* 2", "<=", "64Mi", "40/s", "\t", "\r\n", "é", "\x00"]


@st.composite
def mutated_specs(draw):
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 6))):
        position = draw(st.integers(0, len(text)))
        choice = draw(st.integers(0, 2))
        if choice == 0:
            text = text[:position] + draw(st.sampled_from(FRAGMENTS)) + text[position:]
        elif choice == 1:
            length = draw(st.integers(1, 20))
            text = text[:position] + text[position + length:]
        else:
            text = text[:position] + draw(st.text(max_size=8)) + text[position:]
    return text


def _front_end(text: str) -> None:
    try:
        compile_sources({"fuzz.arena": SourceFile("fuzz.arena", text)})
    except DiagnosticError as error:
        assert error.diagnostics, "a DiagnosticError must carry diagnostics"
        for diagnostic in error.diagnostics:
            assert diagnostic.code.startswith("E") and diagnostic.message


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_specs())
def test_mutated_specs_give_diagnostics_not_crashes(text):
    _front_end(text)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_gives_diagnostics_not_crashes(text):
    _front_end(text)
