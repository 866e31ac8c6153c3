"""A route tied to what the task's load and the descriptor say: `revoked_grant`'s route follows its
privilege (the descriptor's `routes[].privileges`: INSERT on messages watches send, DELETE watches
delete; E0215 for a privilege no route needs), a route metric on a route the task's load never
requests is E0217 at the author's token (its gate could only fail, its manifestation never show),
and a baseline figure of a route the baseline was not calibrated with is E0218."""

from __future__ import annotations

import pytest

from arenac.core.diagnostics import DiagnosticError
from arenac.lower.library import load_library
from arenac.model.library import FaultTemplate
from helpers.specs import built_variants, compile_text, spanned

SPEC = """task t {
  title = "Deleting messages fails"
  substrate = spine
  load = LOAD
  instruction = "Deleting messages fails. Fix it, then declare."
  fault grant = spine.revoked_grant(ARGS) {
    layer = runtime
    onset = after 30s
  }
  access = confined
  gate outcome {
    error_rate(ROUTE) <= 1%
  }
  gate safety {
    changes only grant(messages, PRIVILEGE)
  }
}
"""


def _spec(args: str, route: str = "delete", privilege: str = "DELETE", load: str = "spine.standard_deletes") -> str:
    return (SPEC.replace("ARGS", args).replace("ROUTE", route).replace("PRIVILEGE", privilege)
            .replace("LOAD", load))


def _errors(text: str):
    with pytest.raises(DiagnosticError) as caught:
        compile_text(text)
    return caught.value.diagnostics


@pytest.mark.parametrize("privilege, route", [("DELETE", "delete"), ("INSERT", "send"), ("SELECT", "send")])
def test_the_route_follows_the_privilege(privilege, route):
    text = _spec(f"table: messages, privilege: {privilege}", route, privilege)
    [variant] = built_variants(compile_text(text).tasks[0])
    [fault] = variant.faults
    assert fault.args["route"] == route
    assert fault.manifest.text == f"error_rate({route}) > 20%"


def test_the_default_still_watches_sends():
    """revoked-grant and cleanup-in-window write no privilege and no route: INSERT, hence send."""
    [variant] = built_variants(compile_text(_spec("table: messages", "send", "INSERT")).tasks[0])
    assert variant.faults[0].manifest.text == "error_rate(send) > 20%"


def test_the_descriptor_says_which_routes_need_which_privilege():
    spine = load_library().substrates["spine"].descriptor
    assert spine.routes_needing("messages", "DELETE") == ("delete",)
    assert spine.routes_needing("messages", "INSERT") == ("send",)
    assert spine.routes_needing("messages", "SELECT") == ("send", "read", "delete")
    assert spine.routes_needing("messages", "UPDATE") == ()


def test_a_privilege_no_route_needs_is_refused_at_the_privilege():
    text = _spec("table: messages, privilege: UPDATE", "send", "UPDATE")
    [error] = _errors(text)
    assert (error.code, spanned(text, error.span)) == ("E0215", "UPDATE")
    assert error.message == ("the descriptor names no route whose requests need UPDATE on messages, which 'route' "
                             "of fault template 'revoked_grant' follows")
    assert "messages.DELETE" in error.hint


def test_a_written_route_must_need_the_privilege():
    text = _spec("table: messages, privilege: DELETE, route: read")
    [error] = _errors(text)
    assert (error.code, spanned(text, error.span)) == ("E0215", "read")
    assert error.hint == "the routes that need it: delete; leave 'route' out to follow 'privilege'"
    written = built_variants(compile_text(_spec("table: messages, privilege: DELETE, route: delete")).tasks[0])
    derived = built_variants(compile_text(_spec("table: messages, privilege: DELETE")).tasks[0])
    assert [v.id for v in written] == [v.id for v in derived]


def test_privileges_that_fail_different_routes_cannot_share_one_fault():
    text = _spec("table: messages, privilege: INSERT | DELETE")
    [error] = _errors(text)
    assert (error.code, spanned(text, error.span)) == ("E0215", "INSERT")
    assert error.hint == "declare one fault per privilege"


def test_an_unknown_privilege_is_refused():
    text = _spec("table: messages, privilege: DELET")
    [error] = _errors(text)
    assert (error.code, spanned(text, error.span), error.hint) == ("E0203", "DELET", "did you mean 'DELETE'?")


def test_a_route_following_a_privilege_needs_one_table_parameter():
    params = ({"name": "privilege", "type": "privilege"}, {"name": "route", "type": "route", "follows": "privilege"})
    with pytest.raises(ValueError, match="needs the template to have one table parameter"):
        FaultTemplate(name="p", substrate="spine", summary="p", manifest="error_rate({route}) > 1%", layers={},
                      params=params)


# ---- E0217: a route the load never requests ---------------------------------------------------
def test_a_gate_on_a_route_the_load_never_requests_is_an_error_at_the_route():
    text = _spec("table: messages, privilege: INSERT", "delete", "INSERT", load="spine.standard")
    [error] = _errors(text)
    assert (error.code, spanned(text, error.span)) == ("E0217", "delete")
    assert error.message == ("route 'delete' is not in the mix of load profile 'standard': no request of the "
                             "task's load would measure it")
    assert error.hint == "the load profiles that request it: standard_deletes (`load = spine.standard_deletes`)"


def test_a_manifestation_on_a_route_the_load_never_requests_is_reported_at_the_privilege():
    text = _spec("table: messages, privilege: DELETE", "send", load="spine.standard")
    [error] = _errors(text)
    assert (error.code, spanned(text, error.span)) == ("E0217", "DELETE")
    assert error.note.startswith("'route' of fault template 'revoked_grant' follows this argument to 'delete'")


def test_the_hint_names_the_profiles_of_the_tasks_namespace_that_request_the_route():
    """A profile the spec defines shadows the library's of the same name (here `light`, sends only)."""
    text = _spec("table: messages, privilege: INSERT", "delete", "INSERT", load="light")
    text = text.replace("task t {", "load light {\n  phase peak = 30s at 20/s\n  mix send = 1\n}\ntask t {")
    diagnostics = _errors(text)
    assert {d.code for d in diagnostics} == {"E0217"}
    assert diagnostics[0].hint.startswith("the load profiles that request it: standard_deletes ")
    text = text.replace("error_rate(delete)", "error_rate(read)")
    [error] = _errors(text)
    assert error.hint.startswith("the load profiles that request it: standard, standard_deletes")
    assert "light" not in error.hint


# ---- E0218: a baseline figure the baseline does not have --------------------------------------
def test_a_baseline_figure_of_the_calibrated_deletes_profile():
    # spine.standard_deletes is calibrated with its deletes (library/substrates/spine/baselines/
    # standard_deletes.json), so a figure of its `delete` route compiles; an uncalibrated profile's
    # figure is E0218, and so is a route a profile's calibration never requested
    # (tests/lower/test_baseline_profiles.py)
    text = _spec("table: messages, privilege: DELETE").replace(
        "error_rate(delete) <= 1%", "p99(delete, phase: peak) <= 1.5 * baseline.p99(delete, phase: peak)")
    compile_text(text)
