"""An episode whose worker sent no result: "interrupted" after the runner's own stop (so a resume runs
it again), else the worker's end (arenac/runner/worker.py `lost_result_reason`)."""

from arenac.runner.options import EpisodeResult
from arenac.runner.retry import infra_error
from arenac.runner.worker import lost_result_reason


def test_a_worker_killed_by_the_runners_stop_is_interrupted():
    assert lost_result_reason("signal SIGTERM", stopped=True) == "interrupted"


def test_a_worker_that_died_by_itself_names_how():
    reason = lost_result_reason("signal SIGKILL", stopped=False)
    assert reason == "the episode worker ended without a result (signal SIGKILL)"


def test_only_the_interrupted_one_is_left_to_a_resume_rather_than_a_retry(tmp_path):
    # resume.py runs an infra_error again only when its reason is exactly "interrupted"
    interrupted = EpisodeResult(tmp_path, "infra_error", 0, False, False, 0.4, lost_result_reason("x", True))
    died = EpisodeResult(tmp_path, "infra_error", 0, False, False, 0.4, lost_result_reason("x", False))
    assert interrupted.reason == "interrupted"
    assert not infra_error(interrupted) and infra_error(died)
