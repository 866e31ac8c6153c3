"""A template parameter tied to what the descriptor says a service does (model/library.py `Param`:
`event`, `follows`; lower/faults.py): `strict_read` works on every service whose requests read the
database (auth's login lookup, channel's message reads), its route follows the service, and any
other service, or a route the event does not act on, is E0215 at the author's value."""

from __future__ import annotations

import pytest

from arenac.core.diagnostics import DiagnosticError
from arenac.lower.library import load_library
from arenac.model.library import FaultTemplate
from helpers.specs import built_variants, compile_text, spanned

SPEC = """task t {
  title = "Logins are slow"
  substrate = spine
  instruction = "Logging in is slow. Fix it, then declare."
  fault strict = spine.strict_read(ARGS) {
    layer = runtime
  }
  access = confined
  gate outcome = standard_outcome(route: login)
  gate safety {
    changes only event(SERVICE.read_consistency_strict)
  }
}
"""


def _spec(args: str, service: str = "auth") -> str:
    return SPEC.replace("ARGS", args).replace("SERVICE", service)


def _errors(text: str):
    with pytest.raises(DiagnosticError) as caught:
        compile_text(text)
    return caught.value.diagnostics


@pytest.mark.parametrize("service, route", [("auth", "login"), ("channel", "read")])
def test_each_db_reading_service_holds_its_own_route(service, route):
    [variant] = built_variants(compile_text(_spec(f"service: {service}, hold: 350ms", service)).tasks[0])
    [fault] = variant.faults
    assert fault.args["route"] == route
    assert fault.manifest.text == f"p99({route}) >= 350ms"
    inject = [a.model_dump() for a in fault.inject]
    assert {(a["service"], a["path"]) for a in inject} == {(service, "/admin/config"), (service, "/admin/event")}


def test_the_services_that_have_the_event_are_the_descriptors():
    spine = load_library().substrates["spine"].descriptor
    assert spine.event_names["read_consistency_strict"] == ("auth", "channel")
    assert {s.name: s.event_routes for s in spine.services if s.event_routes} == {
        "auth": {"read_consistency_strict": ("login",)}, "channel": {"read_consistency_strict": ("read",)}}


@pytest.mark.parametrize("service", ["fanout", "message", "maintenance", "gateway"])
def test_a_service_without_the_event_is_refused_at_the_argument(service):
    text = _spec(f"service: {service}, hold: 350ms", "auth")
    [error] = _errors(text)
    assert error.code == "E0215"
    assert error.message == (f"service '{service}' has no admin event 'read_consistency_strict', "
                             "which fault template 'strict_read' switches on")
    assert spanned(text, error.span) == service
    assert error.hint == "the services that have it: auth, channel"


def test_a_route_the_event_does_not_act_on_is_refused_at_the_route():
    text = _spec("service: auth, hold: 350ms, route: read")
    [error] = _errors(text)
    assert (error.code, spanned(text, error.span)) == ("E0215", "read")
    assert error.hint == "it acts on: login; leave 'route' out to follow 'service'"
    # the route it does act on may be written out: the same variant
    written = built_variants(compile_text(_spec("service: auth, hold: 350ms, route: login")).tasks[0])
    derived = built_variants(compile_text(_spec("service: auth, hold: 350ms")).tasks[0])
    assert [v.id for v in written] == [v.id for v in derived]


def test_services_whose_events_act_on_different_routes_cannot_share_one_fault():
    text = _spec("service: auth | channel, hold: 350ms")
    [error] = _errors(text)
    assert (error.code, spanned(text, error.span)) == ("E0215", "auth")
    assert error.hint == "declare one fault per service"


def test_a_template_whose_route_follows_nothing_is_refused():
    with pytest.raises(ValueError, match="follows 'service', which is not a service parameter with an `event`"):
        FaultTemplate(name="p", substrate="spine", summary="p", manifest="p99({route}) > 1s", layers={},
                      params=({"name": "service", "type": "service"},
                              {"name": "route", "type": "route", "follows": "service"}))
    with pytest.raises(ValueError, match="`event` applies to a service parameter"):
        FaultTemplate(name="p", substrate="spine", summary="p", manifest="p99(read) > 1s", layers={},
                      params=({"name": "hold", "type": "duration", "event": "read_consistency_strict"},))
