"""oracle/solve.sh: the golden fix as the commands an agent could type.

Each bound action becomes one command through its channel: `kubectl` for Kubernetes
verbs and exec, `admin-api` for brokered admin calls, `db-sql` for the database role.
Every argument is shell-quoted here, once; the Jinja template only loops over lines.
"""

from __future__ import annotations

import json
import shlex

from arenac.core.units import format_seconds
from arenac.model.actions import (
    ActionHandler,
    AdminAction,
    KubectlAction,
    RedisAction,
    SendBurstAction,
    SqlAction,
    ValuesAction,
    dispatch,
)
from arenac.model.substrate import Service, Substrate
from arenac.model.task import BoundAction, Variant, waits_before_repair
from arenac.render.text import render_text


def _q(*words: str) -> str:
    return " ".join(shlex.quote(w) for w in words)


def _service(substrate: Substrate, name: str) -> Service:
    """A service an action names: lowering has checked that the substrate has it."""
    service = substrate.service(name)
    assert service is not None, name
    return service


def command(bound: BoundAction, substrate: Substrate) -> str:
    """The command line(s) that carry out one bound action through its channel."""
    return dispatch(bound.action, _Command(substrate, bound.channel.name))


class _Command(ActionHandler[str]):
    def __init__(self, substrate: Substrate, channel: str) -> None:
        self.substrate = substrate
        self.channel = channel

    def on_kubectl(self, action: KubectlAction) -> str:
        substrate = self.substrate
        service = substrate.service(action.service)
        kind = "statefulset" if service and service.workload_kind == "StatefulSet" else "deployment"
        workload = f"{kind}/{service.workload}" if service else action.service
        if action.verb == "patch_configmap":
            patch = json.dumps({"data": dict(sorted(action.data.items()))}, sort_keys=True)
            configmap = _service(substrate, action.service).configmap
            assert configmap is not None, action.service  # a config-layer fault's service has one
            return _q("kubectl", "patch", "configmap", configmap, "--type", "merge", "-p", patch)
        if action.verb == "rollout_restart":
            return (_q("kubectl", "rollout", "restart", workload) + "\n"
                    + _q("kubectl", "rollout", "status", workload, "--timeout=120s"))
        if action.verb == "set_image":
            image = f"{substrate.image_repository}:{action.release}"
            container = _service(substrate, action.service).container
            return (_q("kubectl", "set", "image", workload, f"{container}={image}") + "\n"
                    + _q("kubectl", "rollout", "status", workload, "--timeout=120s"))
        if action.verb == "scale":
            return _q("kubectl", "scale", workload, f"--replicas={action.replicas}")
        return _q("kubectl", "delete", "pod", "-l", f"app.kubernetes.io/component={action.service}")

    def on_admin(self, action: AdminAction) -> str:
        body = json.dumps(action.body, sort_keys=True)
        if self.channel == "admin_api":
            return _q("admin-api", action.service, action.method, action.path, body)
        service = _service(self.substrate, action.service)
        return _q("kubectl", "exec", f"deployment/{service.workload}", "--", "curl", "-fsS", "-X", action.method,
                  "-H", "content-type: application/json", "-d", body, f"http://127.0.0.1:8080{action.path}")

    def on_sql(self, action: SqlAction) -> str:
        if self.channel == "db_role":
            return _q("db-sql", "--role", action.role, "-c", action.statement)
        postgres = _service(self.substrate, "postgres")
        # the pod hands psql the agent's roles only (never the superuser): the action's own role
        return _q("kubectl", "exec", f"statefulset/{postgres.workload}", "--", "psql", "-U", action.role, "-d",
                  self.substrate.name, "-v", "ON_ERROR_STOP=1", "-c", action.statement)

    def on_redis(self, action: RedisAction) -> str:
        redis = _service(self.substrate, "redis")
        return _q("kubectl", "exec", f"deployment/{redis.workload}", "--", "redis-cli", *action.command)

    # the harness alone performs these (HARNESS_ONLY): a repair, which the oracle renders, has none
    def on_values(self, action: ValuesAction) -> str:
        raise TypeError(f"cannot render {action!r}")

    def on_send_burst(self, action: SendBurstAction) -> str:
        raise TypeError(f"cannot render {action!r}")


# The mark on a wait the fix cannot do without: a fault fires in the agent's window after it, and
# repairing that fault sooner would be undone by its injection (validate.py's E0527). The adversarial
# control `fix-now` strips every other wait and keeps these; its script (which cannot import arenac)
# spells the same words, and a test holds the two together.
ONSET_WAIT_MARK = "# until a fault fires in the agent's window"


def _onset_waits(variant: Variant) -> set[int]:
    """The indices of the oracle's fixed waits before it repairs a fault fired in the agent's
    window: the waits E0527 counts (validate.py), which fix-now keeps."""
    repaired = {s.target for s in variant.spec.oracle if s.kind == "repair"}
    return {index for fault in variant.faults if fault.fires_in_window and fault.name in repaired
            for index in waits_before_repair(variant.spec.oracle, fault.name)}


def solve_script(variant: Variant, substrate: Substrate) -> str:
    faults = {f.name: f for f in variant.faults}
    onset_waits = _onset_waits(variant)
    steps = []
    for index, step in enumerate(variant.spec.oracle):
        if step.kind == "repair":
            assert step.target is not None  # lowering gives a repair its fault
            fault = faults[step.target]
            steps.append({"comment": f"repair {fault.name}: {fault.summary} ({fault.layer} layer)",
                          "commands": [command(b, substrate) for b in fault.repair]})
        elif step.kind == "wait_until":
            assert step.duration_s is not None  # lowering gives a wait its duration
            steps.append({"comment": f"wait until healthy, at most {format_seconds(step.duration_s)}",
                          "commands": [_q("wait-until-healthy", "--timeout", format_seconds(step.duration_s))]})
        elif step.kind == "wait_for":
            assert step.duration_s is not None
            sleep = _q("sleep", _seconds(step.duration_s))
            steps.append({"comment": f"wait {format_seconds(step.duration_s)}",
                          "commands": [f"{sleep}  {ONSET_WAIT_MARK}" if index in onset_waits else sleep]})
        else:
            steps.append({"comment": "declare the repair complete", "commands": ["declare_repair_complete"]})
    return render_text("solve.sh.j2", task=variant.task, variant=variant.id, steps=steps)


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def expectations(variant: Variant) -> dict[str, object]:
    return {
        "task": variant.task,
        "variant": variant.id,
        "controls": {"healthy": "pass", "noop": "fail", "oracle": "pass"},
    }
