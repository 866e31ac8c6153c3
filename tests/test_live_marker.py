"""The guard that keeps the `live` marker truthful (conftest.py), on both sides."""

from __future__ import annotations

import pytest

from arenac.runner import launch as runner_cli
from arenac.substrate import procs
from arenac.substrate.spine import postgres, redis_local, stack
from helpers import LiveWithoutMarker


def test_an_unmarked_test_cannot_spawn_a_spine_process_or_launch_a_worker():
    for module in (postgres, redis_local, stack):
        with pytest.raises(LiveWithoutMarker, match=r"mark it @pytest\.mark\.live"):
            module.spawn("postgres", ["true"])
    with pytest.raises(LiveWithoutMarker):
        runner_cli.run_in_worker()


@pytest.mark.live
def test_a_live_test_gets_the_real_spawners():
    from arenac.runner import worker

    assert all(module.spawn is procs.spawn for module in (postgres, redis_local, stack))
    assert runner_cli.run_in_worker is worker.run_in_worker
    assert worker.run_in_worker.__module__ == "arenac.runner.worker"
