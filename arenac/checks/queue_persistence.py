"""Queues protected across a restart of a datastore that, healthy, keeps nothing across one.

Contract: `protect queue(Q) at after_restart` judges Q after the restart challenge restarted the
datastore that holds Q (the descriptor's `queues[].datastore`; lower/gates.py makes sure the
challenge restarts it, E0529). A datastore that keeps its data across a restart only under some
settings (the descriptor's `keeps_data_when`: spine's Redis, `appendonly: "yes"`) and whose healthy
values lack them starts empty after that restart in the healthy control, which runs the substrate's
chart with no fault: every notification queued or delivered before it is gone, so the control
cannot pass and no variant qualifies. The healthy values are the task's: the descriptor's `config`
with the task's `healthy { }` settings over them (`TaskSpec.healthy_config`), so a task that makes
its Redis persist (`config(redis.appendonly) = "yes"`) is not warned. `unkept_queue_warnings(task)`
is a warning (E0530) at each protect line whose datastore keeps nothing, naming the settings and
the healthy block that would make it keep them. A warning, not an error: the bundles are still what
an author running the substrate so configured needs, and the spec is not wrong, only unqualifiable
on the substrate as the task has it healthy.
"""

from __future__ import annotations

from arenac.core.diagnostics import Diagnostic
from arenac.lower.task import LoweredTask
from arenac.model.gates import ProtectQueue


def unkept_queue_warnings(task: LoweredTask) -> list[Diagnostic]:
    """E0530 for each queue protected `at after_restart` whose datastore, healthy, keeps nothing."""
    substrate = task.substrate
    holders = {q.name: q.datastore for q in substrate.queues}
    found: list[Diagnostic] = []
    for index, check in enumerate(task.spec.gates.safety):
        if not isinstance(check, ProtectQueue) or "after_restart" not in (check.at or ()):
            continue
        for queue in check.queues:
            datastore = substrate.service(holders.get(queue) or "")
            if datastore is None:
                continue
            config = task.spec.healthy_config(datastore)
            if datastore.keeps_data(config):
                continue
            needed = ", ".join(f"{key}: {value!r}" for key, value in datastore.keeps_data_when.items())
            healthy = ", ".join(f"{key}: {config.get(key, '(unset)')!r}" for key in datastore.keeps_data_when)
            block = "; ".join(f'config({datastore.name}.{key}) = "{value}"'
                              for key, value in datastore.keeps_data_when.items())
            found.append(Diagnostic(
                "E0530", f"queue({queue}) is protected `at after_restart`, but {substrate.name}'s healthy "
                f"{datastore.name} keeps nothing across a restart ({healthy}): the healthy control loses the "
                "queue and the inboxes at the restart challenge and cannot pass, so no variant qualifies",
                task.spans.safety.get(index, task.spans.task),
                f"{datastore.name} keeps its data only with {needed} in its ConfigMap; make it persist in every "
                f"variant and the healthy control with `healthy {{ {block} }}`, or judge the queue at soak_end "
                "only",
                severity="warning"))
    return found
