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
    assert f"{major}.{minor}" == LATEST
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
    assert problem == SchemaProblem("Widget", "w", LATEST,
                                    f"no schema for example.com/v1 Widget in Kubernetes {LATEST}")


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


def _bad_objects() -> list[dict]:
    unknown_field, missing, wrong_type = deployment(), deployment(), deployment()
    unknown_field["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    del missing["spec"]["selector"]
    wrong_type["spec"]["replicas"] = "two"
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": "get"}]}
    return [unknown_field, missing, wrong_type, role]


@pytest.mark.parametrize("version", ["1.30", LATEST])
def test_the_cached_validators_judge_as_kubernetes_validate_does(version: str) -> None:
    """validate_objects builds each kind's validator once from kubernetes-validate's schema files;
    its verdicts and messages must be the package's own, for good objects and bad ones."""
    import kubernetes_validate

    good_role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"},
                 "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
    for obj in [deployment(), good_role, *_bad_objects()]:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
            expected = None
        except kubernetes_validate.ValidationError as error:
            where = ".".join(str(step) for step in error.path)
            expected = f"{where}: {error.message}" if where else error.message
        problems = validate_objects([obj], versions=(version,))
        assert [p.message for p in problems] == ([] if expected is None else [expected]), obj
    assert len(validate_objects(_bad_objects(), versions=(version,))) == 4
