"""Live episodes as the tests run them: an episode whose harness was overloaded measured the
machine, not the code under test, so it runs again once, as qualify runs it (arenac/runner/retry.py;
the attempt set aside stays beside the run directory). Every other result stands."""

from __future__ import annotations

import threading

from arenac.runner import retry
from arenac.runner.bundle import RunnableBundle
from arenac.runner.options import EpisodeOptions, EpisodeResult
from arenac.runner.trial import run_episode


def run_episode_retrying(bundle: RunnableBundle, options: EpisodeOptions, retries: int = 1) -> EpisodeResult:
    return retry.run_retrying(run_episode, bundle, options, threading.Event(), retries=retries).result
