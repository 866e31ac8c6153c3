"""validate_objects: strict kubernetes-validate checks for the versions we support."""

from __future__ import annotations

import copy

import pytest

from arenac.k8s.schema import LATEST, SchemaProblem, shipped_versions, validate_objects

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "web:1.0", "ports": [{"containerPort": 8080}]}]},
        },
    },
}


def deployment() -> dict:
    return copy.deepcopy(DEPLOYMENT)


def test_latest_is_what_the_package_ships() -> None:
    import kubernetes_validate

    major, minor = kubernetes_validate.latest_version().split(".")[:2]
    assert LATEST == f"{major}.{minor}"
    assert shipped_versions()[-1] == LATEST
    assert "1.30" in shipped_versions()


def test_valid_deployment_passes_every_default_version() -> None:
    assert validate_objects([deployment()]) == []
    assert validate_objects([deployment()], versions=("v1.30.2", LATEST)) == []


def test_unknown_field_fails_in_strict_mode() -> None:
    obj = deployment()
    obj["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    problems = validate_objects([obj])
    assert [(p.kind, p.name, p.version) for p in problems] == [
        ("Deployment", "web", "1.30"),
        ("Deployment", "web", LATEST),
    ]
    assert all("imagePullPolicyy" in p.message for p in problems)
    assert problems[0].message.startswith("spec.template.spec.containers.0: ")


def test_missing_required_field_fails() -> None:
    obj = deployment()
    del obj["spec"]["selector"]
    assert validate_objects([obj], versions=("1.30",)) == [
        SchemaProblem("Deployment", "web", "1.30", "spec: 'selector' is a required property")
    ]


def test_wrong_type_fails() -> None:
    obj = deployment()
    obj["spec"]["replicas"] = "2"
    [problem] = validate_objects([obj], versions=("1.30",))
    assert problem.message.startswith("spec.replicas: ")


def test_unknown_api_is_a_problem_not_a_pass() -> None:
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    [problem] = validate_objects([obj], versions=(LATEST,))
    assert problem == SchemaProblem("Widget", "w", LATEST, f"no schema for example.com/v1 Widget in Kubernetes {LATEST}")


def test_problems_are_sorted_and_only_for_bad_objects() -> None:
    good = deployment()
    bad_config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "dataa": {}}
    bad_deploy = deployment()
    bad_deploy["spec"]["bogus"] = 1
    problems = validate_objects([bad_deploy, good, bad_config], versions=(LATEST, "1.30"))
    assert [(p.kind, p.version) for p in problems] == [
        ("ConfigMap", "1.30"),
        ("ConfigMap", LATEST),
        ("Deployment", "1.30"),
        ("Deployment", LATEST),
    ]


def test_unshipped_version_is_refused() -> None:
    with pytest.raises(ValueError, match="not shipped"):
        validate_objects([deployment()], versions=("1.12",))
