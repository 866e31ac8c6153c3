"""The chart installed by Helm's own install action (helm-python-sdk), an `Installer` for
install.py's seam: what a real cluster can run and the fake API cannot (install.py's docstring says
why: Helm reads the server's OpenAPI document and discovery, which the fake lacks).

Contract:

- `helm_installer(kubeconfig, context)` is an `Installer`: `installer(api, plan, timeout_s)`
  installs the plan's chart (the bundle's, or the healthy control's copy: install.py `chart_of`)
  as release `plan.release` into `plan.application` with exactly the plan's values, no wait
  (install_chart's `wait_ready` waits, with its own account of what is not ready), within
  `timeout_s`; then it creates what the runner adds beside the chart (`plan.added`: the plan
  ConfigMap) with install.py's `create_objects`. It returns the keys of the objects Helm's manifest
  holds and of those added, in the plan's order. Helm's failure raises `InstallFailed` naming it,
  carrying the keys of nothing created (Helm rolls back nothing here; `uninstall` lists and
  deletes whatever is there, Helm's release Secret included). The connection is the runner's
  kubeconfig and context, as for every other call of the trial.
- `helm_manifest(plan, config)` is the objects Helm's install action renders for the plan with
  `dry_run="client"` (no request to any API server): what `helm_installer` would create, parsed,
  each placed as install.py places the rendered objects (`metadata.namespace`, or the release's).
  tests/runner/kube/test_helm_install.py checks that they are the plan's chart objects, object for
  object, for every bundle of tasks/, faulted and healthy.

Helm stores the release (its chart and values: the faults' overlay among them) in a Secret of the
application namespace (`sh.helm.release.v1.arenac.v1`); the agent's Role grants no Secret there
(the real-cluster suite checks `get secrets` is refused), and the uninstall deletes it with the
namespace.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arenac.k8s.helm import HelmRenderError, manifest_objects
from arenac.runner.kube.api import KubeError
from arenac.runner.kube.install import Installer, InstallFailed, InstallPlan, chart_of, create_objects, place_object

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

HelmConfig = Callable[[], Any]  # makes a helm_python.Config (a context manager)


def helm_installer(kubeconfig: Path | None, context: str | None) -> Installer:
    def config() -> Any:
        from helm_python import Config  # lazily: only an install by Helm needs it

        return Config(kubeconfig_path=kubeconfig, kube_context=context)

    def install(api: ApiClient, plan: InstallPlan, timeout_s: float) -> tuple[str, ...]:
        from helm_python.errors import HelmError

        try:
            with config() as helm, chart_of(plan) as chart:
                release = helm.install(chart, plan.release, plan.values, namespace=plan.application,
                                       timeout=max(1, int(timeout_s)), wait=None)
        except HelmError as error:
            raise InstallFailed(f"helm install {plan.release} into {plan.application}: {error}", ()) from error
        installed = {place_object(obj, plan.application).key for obj in _documents(release.get("manifest") or "")}
        added = create_objects(api, [o for o in plan.objects if o.key in plan.added], timeout_s,
                               "the runner's objects beside the chart")
        return tuple(o.key for o in plan.objects if o.key in installed) + added

    return install


def helm_manifest(plan: InstallPlan, config: HelmConfig) -> list[dict[str, Any]]:
    with config() as helm, chart_of(plan) as chart:
        release = helm.install(chart, plan.release, plan.values, namespace=plan.application, dry_run="client")
    return [place_object(obj, plan.application).body for obj in _documents(release.get("manifest") or "")]


def _documents(manifest: str) -> list[dict[str, Any]]:
    try:
        return manifest_objects(manifest, "Helm's release manifest")
    except HelmRenderError as error:
        raise KubeError(error.message) from error
