"""`check` and `compile` run the RBAC lint on every variant (E0406), at the access alternative.

No spec the language can write reaches E0406: lowering rejects secrets, cluster scope, the
escalating verbs and named list/watch/create/deletecollection first (E0404, E0405), and the
language has no wildcard. So the lint-to-diagnostic path is tested here with a hand-built access
surface put into a really lowered task, on both sides: the cohort's surfaces pass, a widened one
fails with the spec's file:line:col, and the surface's `allow` admits what it names.
"""

from __future__ import annotations

import dataclasses

import pytest

from arenac.core.diagnostics import Collector, DiagnosticError, render_text
from arenac.lower.task import LoweredTask
from arenac.model.access import KubeRule
from arenac.pipeline import Compilation, compile_paths, expand_tasks
from arenac.validate import check_variant
from arenac.variants import built
from helpers import ROOT, task_paths

SPEC = "tasks/revoked-grant.arena"
SECRETS = KubeRule(api_group="", resource="secrets", verbs=("get",))
NAMED_LIST = KubeRule(api_group="", resource="configmaps", verbs=("get", "list"), resource_names=("a",))


@pytest.fixture(scope="module")
def compilation() -> Compilation:
    return compile_paths([(ROOT / SPEC).relative_to(ROOT).as_posix()])


def widened(lowered: LoweredTask, *extra: KubeRule, allow: tuple[str, ...] = ()) -> LoweredTask:
    """The task with its `shell` surface granted `extra` rules (and `allow` words) besides its own."""
    surfaces = tuple(
        surface.model_copy(update={"kube": surface.kube + extra, "allow": allow}) if surface.name == "shell"
        else surface
        for surface in lowered.spec.access
    )
    return dataclasses.replace(lowered, spec=lowered.spec.model_copy(update={"access": surfaces}))


def codes(lowered: LoweredTask, compilation: Compilation) -> list[str]:
    errors = Collector()
    for variant in built(lowered.spec, compilation.library):
        check_variant(lowered, variant, errors)
    return [d.code for d in errors.items]


def test_every_variant_of_the_cohort_passes_the_lint() -> None:
    compiled = compile_paths(task_paths())  # raises on any diagnostic, E0406 included
    assert len(compiled.tasks) == len(task_paths()) and all(task.variants for task in compiled.tasks)


def test_the_real_surfaces_pass(compilation: Compilation) -> None:
    assert codes(compilation.tasks[0].lowered, compilation) == []


def test_an_unallowed_grant_is_reported_at_the_access(compilation: Compilation) -> None:
    lowered = widened(compilation.tasks[0].lowered, SECRETS)
    with pytest.raises(DiagnosticError) as raised:
        expand_tasks([lowered], compilation.library, compilation.sources)
    problems = raised.value.diagnostics
    assert {d.code for d in problems} == {"E0406"}
    shell = [v for v in built(lowered.spec, compilation.library) if v.access.name == "shell"]
    assert len(problems) == len(shell) >= 1  # once per variant with the widened surface, no other
    first = problems[0]
    assert first.span is not None and (first.span.file, first.span.line) == (SPEC, 15)
    assert first.message.startswith("access 'shell' renders RBAC that least privilege forbids: Role 'arenac-agent' "
                                    "rules[")
    assert "grants access to secrets (variant " in first.message
    assert first.hint == "add `allow secrets` if the task really needs it"
    text = render_text(first, raised.value.sources)
    assert text.startswith(f"{SPEC}:15:{first.span.column}: error[E0406]: access 'shell' renders RBAC")
    assert "  access = confined | shell | scoped_kubectl\n" in text


def test_the_surfaces_allow_admits_what_it_names(compilation: Compilation) -> None:
    assert codes(widened(compilation.tasks[0].lowered, SECRETS, allow=("secrets",)), compilation) == []
    assert codes(widened(compilation.tasks[0].lowered, SECRETS, allow=("wildcard",)), compilation) != []


def test_names_with_verbs_they_cannot_restrict_are_an_error_whatever_the_surface_allows(
        compilation: Compilation) -> None:
    lowered = widened(compilation.tasks[0].lowered, NAMED_LIST,
                      allow=("secrets", "cluster", "escalate", "bind", "impersonate", "wildcard"))
    errors = Collector()
    variant = next(v for v in built(lowered.spec, compilation.library) if v.access.name == "shell")
    check_variant(lowered, variant, errors)
    [problem] = errors.items
    assert problem.code == "E0406" and "restricts resourceNames" in problem.message
    assert problem.hint is not None and problem.hint.startswith("give the verbs a name cannot restrict")

