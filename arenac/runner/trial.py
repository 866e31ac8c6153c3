"""One episode as a trial, end to end: its run directory, scratch directory and backend, the plan
(episode.py), the teardown, the judged timeline and the grade.

The result is the run directory described in docs/evidence.md: marked INCOMPLETE from its first
write until its verdict and reward are written (records.begin_run / finish_run), so that a runner
killed midway leaves a directory that nothing grades or reuses. A harness failure is an
infra_error; a substrate that refuses the harness after the handover, or an agent whose files
filled the disk, is the agent's failure (scored); a starved harness is not scored (headroom.py).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import asyncpg
import redis

from arenac.model.evidence import Timeline, TrialStatus
from arenac.runner import harness_adapters as adapters
from arenac.runner import headroom
from arenac.runner.backend import Backend
from arenac.runner.bundle import RunnableBundle
from arenac.runner.clock import EpisodeClock
from arenac.runner.episode import Episode, InfraError
from arenac.runner.local_backend import LocalBackend
from arenac.runner.options import EpisodeOptions, EpisodeResult
from arenac.runner.records import EventLog, begin_run, finish_run, write_model
from arenac.runner.state import StateDir
from arenac.sandbox import probe


def _substrate_error(error: BaseException) -> bool:
    """An error of the harness's hands on the substrate (a refused, reset or timed-out connection,
    a database or Redis error): after the handover the agent may have caused it. Other OS errors
    (a full disk, a missing file) are the harness's own."""
    return isinstance(error, (ConnectionError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError,
                              redis.RedisError))


def _settle_writeback(log: EventLog) -> None:
    """Write out the machine's pending writes before the episode measures anything. PostgreSQL
    commits with fsync, and an fsync waits behind whatever else is dirty: a fresh install leaves
    hundreds of MB that the kernel writes back some 30 s later, in the middle of the first episode,
    as 100-600 ms send stalls of a healthy stack (seen: the README's first qualify on a fresh clone
    failed its healthy control's peak p99, 400 ms; with the writes flushed first, it passed)."""
    started = time.monotonic()
    os.sync()
    log("writeback_settled", seconds=round(time.monotonic() - started, 3))


def run_episode(bundle: RunnableBundle, options: EpisodeOptions, stop: threading.Event | None = None,
                make_backend: Callable[..., Backend] = LocalBackend) -> EpisodeResult:
    """One episode; raises SandboxUnavailable (before anything starts) when the sandbox asked for
    cannot be had. `make_backend`: the backend's class, given LocalBackend's arguments (the
    external agent's, external_agent.py, replaces its agent's two steps)."""
    started = time.monotonic()
    sandbox = probe(options.isolation.sandbox)
    stop = _linked(stop)  # the caller's stop (Ctrl-C) ends this episode; its own teardown ends only it
    out = options.out
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)  # the agent's user cannot read the run directory
    record = begin_run(out, bundle, options)  # marked INCOMPLETE until finish_run (records.py)
    evidence = out / "evidence"
    evidence.mkdir(exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="arenac-episode-"))
    os.chmod(scratch, 0o711)  # others may pass through (the agent's tools and workdir), never list
    state = StateDir.default().register(scratch)
    clock = EpisodeClock(options.time_scale)
    log = EventLog(out / "events.jsonl", clock)
    backend = make_backend(bundle, scratch, state, options.time_scale, sandbox,
                           agent_ro=options.isolation.agent_ro, agent_network=options.isolation.agent_network)
    episode = Episode(bundle, options, clock, log, evidence, scratch, stop,
                       Timeline.begun(options.time_scale, options.bound_by, healthy=not options.inject_faults), backend,
                       sandbox.mechanism,
                       sandbox.reason)
    _settle_writeback(log)
    headroom_probe = headroom.HeadroomProbe.start(options.cgroup)  # the harness's headroom, to the end
    try:
        _drive(episode)
    finally:
        unwritten: OSError | None = None
        figures = headroom_probe.stop(evidence / "ledger.json")
        try:
            episode.teardown()
        except OSError as error:  # the run directory would not take the evidence (a full disk)
            unwritten = error
        agent_bytes = _tree_bytes(scratch / "agent")
        shutil.rmtree(scratch, ignore_errors=True)
        state.unregister(scratch)
    unwritten = unwritten or log.write_error
    timeline = _judged(episode.timeline, unwritten, agent_bytes, figures, log)
    try:
        write_model(evidence / "headroom.json", figures)
        write_model(evidence / "timeline.json", timeline)
        if unwritten is not None:  # evidence is missing: there is nothing to grade
            return EpisodeResult(out, timeline.status, 0, False, False, round(time.monotonic() - started, 2),
                                 timeline.void_reason or "")
        verdict = adapters.grade(out, bundle)
    except OSError as error:
        return EpisodeResult(out, "infra_error", 0, False, False, round(time.monotonic() - started, 2),
                             f"the run directory could not be written: {error}")
    log("graded", **verdict.reward_record().model_dump())
    result = EpisodeResult(out, timeline.status, verdict.reward, verdict.outcome, verdict.safe_repair,
                           round(time.monotonic() - started, 2), timeline.void_reason or "")
    finish_run(out, record, result.wall_s)  # verdict.json and reward.json are written: complete
    return result


def _drive(episode: Episode) -> None:
    """Run the episode's plan; a failure ends its timeline as the harness's or the agent's."""

    def end(status: TrialStatus, reason: str) -> None:
        episode.timeline = episode.timeline.ended(status, reason)
        episode.log(status, reason=reason)

    try:
        episode.run()
    except InfraError as error:
        end("infra_error", episode.parts_reason or str(error))
    except Exception as error:  # any harness crash is an infrastructure failure, not the agent's
        reason = f"{type(error).__name__}: {error}"
        if episode.parts_reason:  # a lost part of the harness or substrate that the agent did not cause
            end("infra_error", f"{episode.parts_reason} ({reason})")
        elif episode.agent_started.is_set() and _substrate_error(error):
            # the substrate refused the harness after the agent had it: the agent's failure, scored as such
            end("failed", f"harness step '{episode.step}' failed after the handover: {reason}")
        else:
            end("infra_error", reason)


def _judged(timeline: Timeline, unwritten: OSError | None, agent_bytes: int, figures, log: EventLog) -> Timeline:
    """The timeline as recorded: a run directory that would not take the evidence makes the trial
    the agent's failure when its files filled the disk, else an infrastructure failure; a starved
    harness (headroom.py) is not scored."""
    if unwritten is not None:
        reason = f"the run directory could not be written: {unwritten}"
        if agent_bytes > AGENT_DISK_BLAME_BYTES:  # the agent filled the disk: its failure, not a void
            timeline = timeline.ended("failed", f"{reason}, while the agent's files took "
                                                f"{agent_bytes >> 20} MiB of the machine's disk")
        else:
            timeline = timeline.ended("infra_error", reason)
    else:
        judged = headroom.apply(timeline, figures)
        if judged.status != timeline.status:  # a starved harness: its trial is not scored
            log("infra_error", reason=judged.void_reason)
        timeline = judged
    return timeline.finished()


# an agent whose files outgrow this when the disk fills is the one that filled it (an honest repair
# writes kilobytes: notes, a patch, a dump of a table)
AGENT_DISK_BLAME_BYTES = 64 << 20


def _tree_bytes(root: Path) -> int:
    total = 0
    for directory, _, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except OSError:
                continue
    return total


def _linked(outer: threading.Event | None) -> threading.Event:
    inner = threading.Event()
    if outer is not None:
        def follow() -> None:
            while not inner.is_set():
                if outer.wait(0.2):
                    inner.set()
        threading.Thread(target=follow, daemon=True, name="arenac-stop-link").start()
    return inner
