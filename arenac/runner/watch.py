"""Watch the episode's own parts while it runs, and say whose failure a lost part is.

Contract:
- `LossWatch` is what every backend's watch shares: the thread (`start`, `stop`, a look every
  `interval_s`), `check(strict)`, the losses recorded once each (`losses`, `on_loss`), `blame` and
  `record`; a subclass says what one look sees (`_look`), and `_look_at_process` looks at one
  process (the load generator of every backend, a local stack's parts). The cluster's watch of
  pods is runner/kube/pod_watch.py's.
- `PartsWatch(stack, loadgen, clock, on_loss)` runs a thread that looks, every `INTERVAL_S` real seconds,
  at every substrate process the stack runs (except one it is restarting on purpose) and at the
  load generator. A part that exited, or that stayed stopped (SIGSTOP) for `STOPPED_GRACE_S`, is
  recorded once as a `PartLoss`; `losses` keeps them in the order seen, `record()` is what goes
  into evidence/parts.json.
- `blame(handover_s, agent_calls)` says whether the losses make the trial the infrastructure's
  failure (the reason, for an infra_error) or leave it to the gates (None):
    a harness part (the load generator) lost at any time: the infrastructure's;
    a substrate part lost before the handover: the infrastructure's;
    a substrate part lost after the handover: the agent's (None) only if the agent had made a
    call that could change the substrate before the loss. The agent cannot signal the substrate's
    processes (they run as other users, outside its sandbox): only its brokered calls reach them,
    so a loss with none before it is not its doing.
- `changing_calls(actions)` picks, from actions.jsonl records, the times of allowed calls that can
  change something (everything but the read-only verbs of kubectl and GETs of the admin API).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from functools import partial

import psutil

from arenac.model.evidence import PartLossRecord, Parts

INTERVAL_S = 0.25
STOPPED_GRACE_S = 2.0  # a process is seen stopped for a moment by a debugger or ptrace; longer is a fault

# kubectl verbs that read only; every other allowed call may change the substrate
READ_ONLY_KUBECTL = frozenset({"get", "describe", "logs", "top", "explain", "api-resources", "api-versions",
                               "auth", "version", "cluster-info", "events", "wait"})
READ_ONLY_TOOLS = frozenset({"wait-until-healthy", "time-left", "declare_repair_complete"})


@dataclass(frozen=True)
class PartLoss:
    part: str  # e.g. "postgres", "message", "loadgen"
    kind: str  # substrate | harness
    t: float  # plan seconds, when it was seen
    how: str  # "exited with code 1", "killed by SIGKILL", "stopped (SIGSTOP) for 2 s"


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "exited"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


class LossWatch:
    """The shared part of a backend's watch (see the module's docstring)."""

    interval_s = INTERVAL_S

    def __init__(self, clock, on_loss: Callable[[], None] | None = None) -> None:
        self.clock = clock
        self.on_loss = on_loss  # called (from the watch's thread) after each loss is recorded
        self.losses: list[PartLoss] = []
        self._seen: set[tuple[str, object]] = set()  # (part, its identity: a pid, a pod's uid) recorded
        self._stopped_since: dict[tuple[str, object], float] = {}
        self._halt = threading.Event()
        self._lock = threading.Lock()  # the thread and a caller's fresh look never record a loss twice
        self._thread = threading.Thread(target=self._run, daemon=True, name="arenac-parts-watch")

    def start(self) -> LossWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._halt.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._halt.wait(self.interval_s):
            try:
                self.check()
            except Exception:  # the stack is being torn down under us; the next look decides
                continue

    def check(self, strict: bool = False) -> None:
        """One look at every part (the thread calls it; a caller may too, for a fresh answer).
        `strict`: a part stopped right now is lost without the grace (before the harness restarts
        parts on purpose, which would end a stopped process and hide what happened to it)."""
        with self._lock:
            self._look(strict)

    def _look(self, strict: bool) -> None:
        raise NotImplementedError

    def _look_at_process(self, name: str, kind: str, popen, strict: bool,
                         restarting: Callable[[], bool] | None = None) -> None:
        """One process: exited (unless `restarting()` says it is being restarted on purpose, asked
        after the exit was seen), or stopped past the grace, is lost."""
        key = (name, popen.pid)
        if key in self._seen:
            return
        code = popen.poll()
        if code is not None:
            if restarting is None or not restarting():
                self._lost(key, PartLoss(name, kind, round(self.clock.now(), 3), _describe_exit(code)))
        elif process_stopped(popen.pid):
            since = self._stopped_since.setdefault(key, time.monotonic())
            if strict or time.monotonic() - since >= STOPPED_GRACE_S:
                self._lost(key, PartLoss(name, kind, round(self.clock.now(), 3), "stopped (SIGSTOP)" if strict
                                         else f"stopped (SIGSTOP) for {STOPPED_GRACE_S:g} s"))
        else:
            self._stopped_since.pop(key, None)

    def _lost(self, key: tuple[str, object], loss: PartLoss) -> None:
        self._seen.add(key)
        self.losses.append(loss)
        if self.on_loss is not None:
            self.on_loss()

    def blame(self, handover_s: float | None, agent_calls: Iterable[float]) -> str | None:
        calls = sorted(agent_calls)
        for loss in self.losses:
            if loss.kind == "harness":
                return f"harness part {loss.part} {loss.how} at plan t={loss.t:g} s"
            if handover_s is None or loss.t < handover_s:
                return f"substrate part {loss.part} {loss.how} before the handover (plan t={loss.t:g} s)"
            if not any(t <= loss.t for t in calls):
                return (f"substrate part {loss.part} {loss.how} at plan t={loss.t:g} s, and no call of the agent "
                        "could have caused it")
        return None

    def record(self) -> Parts:
        """parts.json."""
        return Parts(losses=tuple(PartLossRecord(**asdict(loss)) for loss in self.losses))


class PartsWatch(LossWatch):
    """The local backend's: every process of the stack and the load generator."""

    def __init__(self, stack, loadgen, clock, on_loss: Callable[[], None] | None = None) -> None:
        super().__init__(clock, on_loss)
        self.stack, self.loadgen = stack, loadgen

    def start(self) -> PartsWatch:
        super().start()
        return self

    def _look(self, strict: bool) -> None:
        for name, child in self.stack.children().items():
            self._look_at_process(name, "substrate", child.popen, strict, restarting=partial(self._restarting, name))
        if self.loadgen is not None:
            self._look_at_process("loadgen", "harness", self.loadgen.process, strict)

    def _restarting(self, name: str) -> bool:
        return name in self.stack.restarting()


def process_stopped(pid: int) -> bool:
    """The process is stopped (SIGSTOP, SIGTSTP): it does nothing until continued."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_STOPPED
    except psutil.Error:
        return False


def changing_calls(actions: Iterable[dict]) -> list[float]:
    """Plan times of the allowed agent calls that may change the substrate."""
    times = []
    for action in actions:
        if not action.get("allowed"):
            continue
        tool, argv = action.get("tool", ""), [str(a) for a in action.get("argv", [])]
        if tool in READ_ONLY_TOOLS:
            continue
        if tool == "kubectl" and argv and argv[0] in READ_ONLY_KUBECTL:
            continue
        if tool == "admin-api" and len(argv) > 1 and argv[1].upper() == "GET":  # SERVICE METHOD PATH
            continue
        times.append(float(action.get("t", 0.0)))
    return times
