"""One variant as a Harbor task directory: every file but the identity, written with fixed modes.

Contract: `write_task(directory, source, time_scale)` writes into the (empty) `directory`:

  task.toml                     HarborTask (models.py): metadata, timeouts (timing.py), the collect hook
  instruction.md                the bundle's instruction, byte for byte (it lists the tools)
  environment/docker-compose.yaml   services `main` and `harness` (compose_document)
  environment/harness/Dockerfile    FROM the harness image of this arenac version; the bundle and the token
  environment/harness/bundle/...    the whole bundle, byte for byte, modes as its manifest says
  environment/harness/agent-token   the agent's broker token (the harness serves it; 0400 in the image)
  environment/main/Dockerfile       a pinned Python slim image, user `agent`, the tool clients
  environment/main/tools/...        the brokered tools' clients (address harness:7400) and `sleep`
  solution/solve.sh             the bundle's oracle/solve.sh (the same tools, by name)
  tests/Dockerfile, tests/test.sh, tests/transcribe.py   the verifier: transcribes the harness's verdict

Files are 0644, scripts and tool clients 0755, directories 0755; contents depend only on the
bundle, the time scale and this arenac (no time, no path of this machine). The agent token is
derived from the variant id and the bundle digest (`agent_token`): it is the agent's own
credential, baked into its clients, not a secret kept from it; the broker refuses it after the
freeze.
"""

from __future__ import annotations

import hashlib
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from arenac import __version__
from arenac.broker.clients import write_tool_clients
from arenac.bundle import write_file
from arenac.export import timing
from arenac.export.models import (
    AgentSection,
    Artifact,
    CollectHook,
    EnvironmentSection,
    HarborTask,
    TaskInfo,
    VariantMetadata,
    VerifierEnvironment,
    VerifierSection,
)
from arenac.model.plan import Plan, brokered_tools

HARNESS_IMAGE = f"ghcr.io/arenac/harness:{__version__}"  # docker/harness.Dockerfile, tagged with arenac's version
PYTHON_IMAGE = "python:3.11.11-slim-bookworm"  # the agent's and the verifier's base, pinned as the harness's is
HARNESS_USER = 10002  # the harness image's unprivileged user (docker/harness.Dockerfile)
AGENT_USER = "agent"
AGENT_UID = 1000
BROKER_PORT = 7400
BROKER_ADDRESS = f"harness:{BROKER_PORT}"  # the compose network's name of the harness container
BUNDLE_DIR = "/var/arenac/bundle"
RUN_DIR = "/var/arenac/run"
OUT_DIR = "/var/arenac/out"
TOKEN_FILE = "/var/arenac/agent-token"
TOKEN_LABEL = "arenac harbor export: agent broker token"
ORG = "arenac"
ENVIRONMENT_CPUS = 2  # one episode: about 0.75 cores on average, 1.0-1.5 in its busiest seconds
ENVIRONMENT_MEMORY_MB = 4096
BUILD_TIMEOUT_S = 900


@dataclass(frozen=True)
class SourceBundle:
    """A bundle checked against its manifest, and what the export reads of it."""

    directory: Path
    plan: Plan
    bundle_digest: str
    files: tuple[tuple[str, int], ...]  # every file (manifest.json too): path, mode

    @property
    def variant(self) -> str:
        return self.plan.variant


def agent_token(variant: str, bundle_digest: str) -> str:
    """Deterministic per variant, so that two exports are identical (see the module's contract)."""
    return hashlib.sha256(f"{TOKEN_LABEL}\0{variant}\0{bundle_digest}".encode()).hexdigest()[:40]


def harness_command(time_scale: float) -> list[str]:
    return ["harness", "episode", BUNDLE_DIR, "--listen", f"0.0.0.0:{BROKER_PORT}", "--token-file", TOKEN_FILE,
            "--run-dir", RUN_DIR, "--time-scale", _number(time_scale)]


def healthcheck_command() -> list[str]:
    return ["CMD", "arenac", "harness", "status", "--run-dir", RUN_DIR, "--handed-over"]


def finish_command(timeout_s: int) -> str:
    return shlex.join(["arenac", "harness", "finish", "--run-dir", RUN_DIR, "--out", OUT_DIR,
                       "--timeout", str(timeout_s)])


def compose_document(time_scale: float, budgets: timing.Budgets) -> dict[str, Any]:
    """environment/docker-compose.yaml: merged by Harbor over its own (which gives `main` its
    image name and a `sleep infinity` command). No ports published, no volumes, no privileges."""
    return {
        "services": {
            "main": {
                "build": {"context": "./main"},
                "depends_on": {"harness": {"condition": "service_healthy"}},
            },
            "harness": {
                "build": {"context": "./harness"},
                "command": harness_command(time_scale),
                "healthcheck": {
                    "test": healthcheck_command(),
                    "interval": f"{timing.HEALTHCHECK_INTERVAL_S}s",
                    "timeout": f"{timing.HEALTHCHECK_TIMEOUT_S}s",
                    "retries": timing.HEALTHCHECK_RETRIES,
                    "start_period": f"{budgets.handover_budget_s}s",
                },
            },
        },
    }


def task_config(source: SourceBundle, time_scale: float, budgets: timing.Budgets, instruction: str) -> HarborTask:
    plan = source.plan
    faults = plan.faults
    layers = tuple(sorted({f.layer for f in faults if not f.decoy}))
    onsets = tuple(sorted({f.onset.kind for f in faults}))
    challenges = tuple([f"restart {s}" for s in plan.challenges.restart]
                       + [f"retrigger {f}" for f in plan.challenges.retrigger])
    title = _title(instruction) or plan.task
    decoys = sum(1 for f in faults if f.decoy)
    repairs = ", ".join(f"{f.name}: {f.layer} layer" for f in faults if not f.decoy)
    notes = (f"{len(faults) - decoys} fault(s) to repair ({repairs})"
             + (f", {decoys} decoy(s)" if decoys else "")
             + f"; access {plan.access.name}; onsets {', '.join(onsets)}"
             + f"; challenges after the soak: {', '.join(challenges) or 'none'}"
             + f"; the repair must hold under traffic for a {plan.timeline.soak_s:g}s soak (plan seconds)")
    return HarborTask(
        task=TaskInfo(
            name=f"{ORG}/{plan.variant}",
            description=f"{title} (arenac task {plan.task}, variant {plan.variant})",
            keywords=tuple(dict.fromkeys(["arenac", "incident", "sre", plan.substrate, plan.task, *layers,
                                          plan.access.name])),
        ),
        metadata=VariantMetadata(
            arenac_version=__version__, arenac_task=plan.task, arenac_variant=plan.variant,
            arenac_bundle_digest=source.bundle_digest, title=title, substrate=plan.substrate,
            fault_layers=layers, access_profile=plan.access.name, onset_kinds=onsets, challenges=challenges,
            time_scale=float(time_scale), agent_window_s=plan.timeline.agent_window_s,
            soak_s=plan.timeline.soak_s, difficulty_notes=notes, coordinates=dict(sorted(plan.coordinates.items())),
        ),
        agent=AgentSection(user=AGENT_USER, timeout_sec=float(budgets.agent_timeout_s)),
        verifier=VerifierSection(
            environment_mode="separate", timeout_sec=float(budgets.verifier_timeout_s),
            environment=VerifierEnvironment(cpus=1, memory_mb=1024, network_mode="no-network"),
            collect=(CollectHook(service="harness", command=finish_command(budgets.finish_budget_s),
                                 timeout_sec=float(budgets.collect_timeout_s)),),
        ),
        environment=EnvironmentSection(network_mode="public", build_timeout_sec=float(BUILD_TIMEOUT_S),
                                       cpus=ENVIRONMENT_CPUS, memory_mb=ENVIRONMENT_MEMORY_MB),
        artifacts=(Artifact(source=OUT_DIR, service="harness"),),
    )


def write_task(directory: Path, source: SourceBundle, time_scale: float) -> None:
    plan = source.plan
    budgets = timing.budgets(plan, time_scale)
    instruction = (source.directory / "instruction.md").read_bytes()
    banner = f"arenac {__version__} export of {plan.variant} ({plan.task}), bundle digest {source.bundle_digest}"
    token = agent_token(plan.variant, source.bundle_digest)
    files: dict[str, tuple[bytes, int]] = {
        "task.toml": (task_config(source, time_scale, budgets, instruction.decode("utf-8")).to_toml(
            f"{banner}\nWritten by `arenac export harbor`; docs/harbor.md says what each field is.").encode(), 0o644),
        "instruction.md": (instruction, 0o644),
        "environment/docker-compose.yaml": (
            f"# {banner}\n".encode() + yaml.safe_dump(compose_document(time_scale, budgets), sort_keys=False,
                                                      default_flow_style=False).encode(), 0o644),
        "environment/harness/Dockerfile": (_harness_dockerfile(banner).encode(), 0o644),
        "environment/harness/agent-token": (f"{token}\n".encode(), 0o644),
        "environment/main/Dockerfile": (_main_dockerfile(banner).encode(), 0o644),
        "solution/solve.sh": ((source.directory / "oracle" / "solve.sh").read_bytes(), 0o755),
        "tests/Dockerfile": (_tests_dockerfile(banner).encode(), 0o644),
        "tests/test.sh": (_test_script(banner, plan.variant).encode(), 0o755),
        "tests/transcribe.py": ((Path(__file__).parent / "transcribe.py").read_bytes(), 0o644),
    }
    for path, mode in source.files:
        files[f"environment/harness/bundle/{path}"] = ((source.directory / path).read_bytes(), mode)
    for path in sorted(files):
        data, mode = files[path]
        (directory / path).parent.mkdir(parents=True, exist_ok=True)
        write_file(directory / path, data, mode)
    tools = directory / "environment" / "main" / "tools"
    write_tool_clients(tools, brokered_tools(plan), BROKER_ADDRESS, token, time_scale=time_scale)
    for made in [*sorted(p for p in directory.rglob("*") if p.is_dir()), directory]:
        made.chmod(0o755)


def _title(instruction: str) -> str:
    for line in instruction.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""


def _number(value: float) -> str:
    return f"{value:g}"


def _harness_dockerfile(banner: str) -> str:
    return f"""# {banner}
# The harness: substrate, load, broker and grader, out of the agent's reach. Its base is arenac's
# harness image of the same version (docs/harbor.md says how to build it).
FROM {HARNESS_IMAGE}
USER root
RUN mkdir -p {OUT_DIR} && chown {HARNESS_USER}:{HARNESS_USER} {OUT_DIR}
COPY bundle/ {BUNDLE_DIR}/
COPY --chown={HARNESS_USER}:{HARNESS_USER} --chmod=0400 agent-token {TOKEN_FILE}
USER {HARNESS_USER}
"""


def _main_dockerfile(banner: str) -> str:
    return f"""# {banner}
# The agent's container: the brokered tools' clients and nothing of the task (no bundle, no
# solution, no tests). Harbor runs the agent as `{AGENT_USER}` (task.toml's [agent] user).
FROM {PYTHON_IMAGE}
RUN useradd --create-home --uid {AGENT_UID} --shell /bin/bash {AGENT_USER}
COPY --chmod=0755 tools/ /usr/local/bin/
WORKDIR /home/{AGENT_USER}
"""


def _tests_dockerfile(banner: str) -> str:
    return f"""# {banner}
# The verifier: transcribes the verdict the harness wrote (standard library only; installs nothing).
FROM {PYTHON_IMAGE}
COPY --chmod=0755 test.sh /tests/test.sh
COPY --chmod=0644 transcribe.py /tests/transcribe.py
WORKDIR /tests
"""


def _test_script(banner: str, variant: str) -> str:
    return f"""#!/bin/sh
# {banner}
# Harbor's verifier step: the harness graded the episode in its `finish` collect hook; Harbor
# collected {OUT_DIR} from it and uploaded it here. This writes /logs/verifier/reward.json from
# its verdict, or, for a void or infra_error trial, no reward and a non-zero exit.
# Every root is an environment variable, so the script runs outside a container too.
set -eu
exec "${{ARENAC_PYTHON:-python3}}" "${{ARENAC_TESTS_DIR:-/tests}}/transcribe.py" \\
  --out "${{ARENAC_OUT_DIR:-{OUT_DIR}}}" \\
  --logs "${{ARENAC_VERIFIER_LOGS:-/logs/verifier}}" \\
  --variant {shlex.quote(variant)}
"""
