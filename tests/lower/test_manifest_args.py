"""An author's argument that breaks a fault template's manifestation predicate
(arenac.lower.manifest_args): reported once, at the argument, with the template's text as a note
and the known names as the hint; an argument that fits, or a mistake no argument causes, is not."""

from __future__ import annotations

import pytest

from arenac.core.diagnostics import Collector, DiagnosticError
from arenac.core.source import SourceFile
from arenac.lower.exprs import ExprContext
from arenac.lower.library import load_library
from arenac.lower.manifest_args import check_manifest_args
from arenac.model.library import FaultTemplate
from arenac.syntax.parser import parse
from helpers.specs import MINIMAL, built_variants, compile_text


def _errors(text: str):
    with pytest.raises(DiagnosticError) as caught:
        compile_text(text)
    return caught.value.diagnostics


def test_a_bad_route_is_reported_once_at_the_argument_with_the_routes_and_no_follow_on():
    text = MINIMAL.replace("size: 2)", "size: 2 | 3, route: sendd)").replace(
        "access = scoped_kubectl", "access = confined | scoped_kubectl")
    [error] = _errors(text)
    assert (error.code, error.message) == ("E0203", "unknown route 'sendd'")
    line = text.splitlines()[error.span.line - 1]
    assert line[error.span.column - 1:error.span.end_column - 1] == "sendd"
    routes = [r.name for r in load_library().substrates["spine"].descriptor.routes]
    assert error.hint == f"did you mean 'send'? the routes are {', '.join(routes)}"
    assert "p99({route}, phase: peak)" in error.note and "'pool_size'" in error.note


def test_only_the_breaking_alternative_is_reported():
    text = MINIMAL.replace("size: 2)", "size: 2, route: read | sendd)")
    [error] = _errors(text)
    line = text.splitlines()[error.span.line - 1]
    assert line[error.span.column - 1:error.span.end_column - 1] == "sendd"


def test_an_argument_that_fits_compiles_into_the_manifestation():
    task = compile_text(MINIMAL.replace("size: 2)", "size: 2, route: read)")).tasks[0]
    [variant] = built_variants(task)
    assert variant.faults[0].manifest.text.startswith("p99(read, phase: peak) >")


def _template(manifest: str, default: str) -> FaultTemplate:
    return FaultTemplate(name="probe", substrate="spine", summary="a probe", manifest=manifest, layers={},
                         params=({"name": "route", "type": "string", "default": default},))


def _check(manifest: str, call: str, default: str = "send") -> tuple[bool, Collector]:
    """check_manifest_args on `fault f = spine.probe(CALL)` against a template with MANIFEST."""
    module = parse(SourceFile("t.arena", f"task t {{\n  fault f = spine.probe({call})\n}}\n"))
    decl = module.tasks[0].statements[0]
    substrate = load_library().substrates["spine"].descriptor
    collector = Collector()
    ctx = ExprContext(substrate=substrate, phases=("peak", "trough"), collector=collector)
    route = decl.call.args[0].alternatives[0].text if decl.call.args else default
    return check_manifest_args(decl, _template(manifest, default), {"route": (route,)}, ctx), collector


def test_a_mistake_in_the_template_text_itself_is_left_to_the_expansion():
    ok, collector = _check("p99({route}) > 1.5 * baseline.p99(sned)", "route: send")
    assert ok and not collector.items


def test_a_default_that_breaks_the_text_is_not_blamed_on_the_author():
    ok, collector = _check("p99({route}) > 100ms", "", default="nope")
    assert ok and not collector.items  # the library's own default: the expansion reports it there
    ok, collector = _check("p99({route}) > 100ms", "route: nope")
    assert not ok and [d.message for d in collector.items] == ["unknown route 'nope'"]
