"""A campaign file (`arenac campaign FILE`, TOML or YAML) and one trial's row in the campaign's
results store (arenac/campaign/store.py).

Contract (docs/campaign.md):
- `CampaignSpec` is the file: `agents` (name -> what runs: `oracle`, `noop`, `adversary:NAME` or
  `cmd:PROGRAM ARGS`), `variants` (selectors, or bare paths: paths to bundles, build trees or specs, globs
  allowed, relative to the file, with optional filters by task, fault layer and access profile),
  `k` trials of every agent on every variant, `jobs`, `time_scale`, `backend` (`local`, or
  `kubernetes` with `kubeconfig`, a path relative to the file, and `context`), `retries`
  (how many times a trial that ended in an infra_error runs again: infrastructure errors only) and
  `agent_ro` (directories a `cmd:` agent's program needs, bound read-only into its sandbox).
  Unknown keys are refused (base.Model), so a misspelt key is an error, not a default.
  `arenac schema campaign` prints its JSON Schema.
- An agent's name is also a directory name under the campaign's `runs/`: lower-case letters,
  digits, `.`, `_` and `-`, starting with a letter or digit.
- `TrialRow` is one trial as recorded: who (agent name and what it ran), what (task, variant, its
  faults and layers, access profile, substrate), which trial of k, how many attempts it took (the
  infra_error attempts set aside, with their reasons), status, reward, outcome and safe repair,
  the reason of a trial not scored, every gate check's result, the wall time, the run
  directory relative to the campaign directory, and what the failure taxonomy says of its evidence
  (campaign/taxonomy.py): its failure classes, whether it was a full fix, and why either could not
  be said.
- `CampaignRecord` is campaign.json in the campaign directory: the settings the last invocation
  ran with and the variants it selected. No time or absolute path: the same inputs write the same
  bytes.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator

from arenac.model.base import Model
from arenac.model.evidence import TrialStatus

AGENT_NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
Layer = Literal["config", "runtime", "image"]
# why a scored trial failed (arenac/campaign/taxonomy.py; docs/campaign.md, "Failure classes")
FailureClass = Literal["premature-declaration", "exhaustion", "outcome-not-restored", "lost-on-restart",
                       "lost-on-retrigger", "scope-violation", "guard-violation", "data-damaged", "residual-cause",
                       "no-change", "broke-the-harness"]
CLASSES: tuple[FailureClass, ...] = ("premature-declaration", "exhaustion", "outcome-not-restored",
                                     "lost-on-restart", "lost-on-retrigger", "scope-violation", "guard-violation",
                                     "data-damaged", "residual-cause", "no-change", "broke-the-harness")
AgentName = Annotated[str, StringConstraints(pattern=AGENT_NAME_PATTERN, max_length=64)]


class VariantSelector(Model):
    """Variants to run: every bundle `path` names (a bundle, a tree of bundles, a spec or a
    directory of specs; a glob matches several), kept when it passes every filter given."""

    path: str = Field(min_length=1, description="A bundle, a build tree, a .arena spec or a directory; globs allowed; "
                                                "relative to the campaign file")
    task: tuple[str, ...] = Field(default=(), description="Keep only these tasks")
    layer: tuple[Layer, ...] = Field(default=(), description="Keep variants with a fault at one of these layers")
    access: tuple[str, ...] = Field(default=(), description="Keep only these access profiles")


class CampaignSpec(Model):
    agents: dict[AgentName, Annotated[str, StringConstraints(min_length=1)]] = Field(
        min_length=1, description="name -> oracle | noop | adversary:NAME | cmd:PROGRAM ARGS")
    variants: tuple[VariantSelector, ...] = Field(min_length=1)
    k: int = Field(default=1, ge=1, description="Trials of every agent on every variant")
    jobs: int = Field(default=1, ge=1, description="Trials run side by side")
    time_scale: float = Field(default=1.0, gt=0, allow_inf_nan=False, description="Compress every duration")
    backend: Literal["local", "kubernetes"] = Field(default="local", description="Where the trials run: local "
                                                                                 "processes, or a cluster")
    kubeconfig: str | None = Field(default=None, min_length=1, description="backend kubernetes: the cluster's "
                                   "kubeconfig (default: $KUBECONFIG or ~/.kube/config); relative to the campaign file")
    context: str | None = Field(default=None, min_length=1, description="backend kubernetes: the kubeconfig's "
                                                                        "context (default: its current one)")
    retries: int = Field(default=1, ge=0, description="Times a trial that ended in an infra_error runs again")
    agent_ro: tuple[str, ...] = Field(default=(), description="Directories a cmd: agent needs, bound read-only; "
                                                              "relative to the campaign file")

    @field_validator("variants", mode="before")
    @classmethod
    def _a_bare_path_is_a_selector(cls, value: object) -> object:
        """`variants = ["build/*/*"]`: a string is a selector with that path and no filter."""
        if isinstance(value, list | tuple):
            return [{"path": item} if isinstance(item, str) else item for item in value]
        return value


class CheckResult(Model):
    """One gate check of a trial's verdict, in the spec's units (the verdict's own text)."""

    gate: Literal["outcome", "safety"]
    text: str
    passed: bool
    detail: str


class SetAsideAttempt(Model):
    """An attempt that ended in an infra_error and was run again; its run directory is kept."""

    run_dir: str
    reason: str


class TrialRow(Model):
    agent: str
    agent_spec: str  # what the agent name ran (the campaign file's value)
    task: str
    variant: str
    trial: int = Field(ge=1)  # which of the k trials
    faults: dict[str, str]  # fault name -> its layer in this variant
    access: str
    substrate: str
    status: TrialStatus
    reward: Literal[0, 1]
    outcome: bool
    safe_repair: bool
    reason: str | None = None  # why a trial is not scored, or what failed
    checks: tuple[CheckResult, ...] = ()
    wall_s: float
    run_dir: str  # relative to the campaign directory
    set_aside: tuple[SetAsideAttempt, ...] = ()
    failure_classes: tuple[FailureClass, ...] = ()  # every class that applies to a scored failure, in CLASSES order
    full_fix: bool | None = None  # the agent changed every state target of the oracle's repair; None: not said
    taxonomy_problem: str | None = None  # why the classes or the full fix could not be said (unreadable evidence)

    @property
    def attempts(self) -> int:
        return len(self.set_aside) + 1


class CampaignRecord(Model):
    """OUT/campaign.json: what the last invocation ran (the file's settings with the command line's
    overrides, and the variants it selected), for the reports and for a reader of the directory."""

    schema_version: Literal["arenac.campaign/v1"] = "arenac.campaign/v1"
    agents: dict[str, str]
    variants: tuple[str, ...]  # the selected bundles' variant ids, in the order they run
    k: int
    time_scale: float
    retries: int
    backend: str
