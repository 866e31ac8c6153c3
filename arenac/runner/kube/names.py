"""A trial's names on the cluster: its two namespaces and the labels that mark them.

Contract:

- A trial id must be a valid Kubernetes label value (1 to 63 characters: letters, digits, `-`,
  `_`, `.`, beginning and ending with a letter or digit), as it is the value of the label
  `arenac.dev/trial`; anything else raises `KubeError`.
- `trial_namespaces(trial)` is deterministic: `arenac-<slug>-app` and `arenac-<slug>-harness`,
  each a DNS-1123 label (lowercase letters, digits and `-`, at most 63 characters). The slug is the
  trial id itself when that is already lowercase letters, digits and single `-` and at most 48
  characters (so the longer name, `-harness`, fits); otherwise it is the id lowercased, every other
  character made `-`, cut to 39 characters, then `-` and the first 8 hex digits of the id's
  sha256: two ids that would read alike after the mapping ("Run_1", "run-1") still get different
  namespaces.
- `labels(trial, role)` are the labels of a trial's namespace: `app.kubernetes.io/managed-by:
  arenac`, `arenac.dev/trial: <trial>`, `arenac.dev/role: application|harness`. `OWNER` is the
  annotation naming the runner's state that created it (records.py); `namespace_body` is the
  Namespace object with both. `held_by(labels)` is the trial whose labels those are, None when
  they are not arenac's trial labels.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Literal

from arenac.runner.kube.api import KubeError

Role = Literal["application", "harness"]
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "arenac"
TRIAL = "arenac.dev/trial"
ROLE = "arenac.dev/role"
OWNER = "arenac.dev/owner"  # an annotation: which state directory's runner created the namespace

_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_PLAIN_SLUG = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_LONGEST_SUFFIX = "-harness"
_SLUG_MAX = 63 - len("arenac-") - len(_LONGEST_SUFFIX)  # 48


@dataclass(frozen=True)
class TrialNamespaces:
    trial: str
    application: str
    harness: str

    def by_role(self) -> tuple[tuple[Role, str], tuple[Role, str]]:
        return (("application", self.application), ("harness", self.harness))


def check_trial_id(trial: str) -> str:
    if not _LABEL_VALUE.fullmatch(trial):
        raise KubeError(f"trial id {trial!r} is not a Kubernetes label value (1-63 letters, digits, "
                        "'-', '_' or '.', beginning and ending with a letter or digit)")
    return trial


def _slug(trial: str) -> str:
    if _PLAIN_SLUG.fullmatch(trial) and len(trial) <= _SLUG_MAX:
        return trial
    mapped = re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", trial.lower())).strip("-")
    digest = hashlib.sha256(trial.encode()).hexdigest()[:8]
    head = mapped[:_SLUG_MAX - 9].strip("-")
    return f"{head}-{digest}" if head else digest


def trial_namespaces(trial: str) -> TrialNamespaces:
    slug = _slug(check_trial_id(trial))
    names = TrialNamespaces(trial, f"arenac-{slug}-app", f"arenac-{slug}-harness")
    assert _DNS_LABEL.fullmatch(names.application) and _DNS_LABEL.fullmatch(names.harness), names
    return names


def labels(trial: str, role: Role) -> dict[str, str]:
    return {MANAGED_BY: MANAGER, TRIAL: check_trial_id(trial), ROLE: role}


def namespace_body(name: str, trial: str, role: Role, owner: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels(trial, role), "annotations": {OWNER: owner}}}


def held_by(found: dict[str, str]) -> str | None:
    return found.get(TRIAL) if found.get(MANAGED_BY) == MANAGER else None
