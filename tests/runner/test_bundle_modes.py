"""The runner refuses a bundle whose file mode changed, naming the change as `arenac verify-bundle`
does (one wording: `BundleCheck.findings`); an intact bundle opens. `arenac run` is refused at the
manifest check, exit 3, before any episode starts (so the test needs no live marker)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from arenac.runner.bundle import BundleRefused, open_bundle
from helpers import ROOT
from helpers.golden import complete_variant

GOLDEN = complete_variant("minimal")  # the golden bundle with its vendored chart files restored


@pytest.fixture
def bundle(tmp_path):
    copy = tmp_path / "bundles" / GOLDEN.name
    shutil.copytree(GOLDEN, copy)
    return copy


def _arenac(tmp_path, *args: str) -> subprocess.CompletedProcess:
    """The real CLI in a process of its own, with its own state and temporary directories."""
    env = dict(os.environ, ARENAC_STATE_DIR=str(tmp_path / "state"), TMPDIR=str(tmp_path / "tmp"),
               PYTHONPATH=str(ROOT))
    for name in ("state", "tmp", "work"):
        (tmp_path / name).mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "arenac.cli", *args], cwd=tmp_path / "work", env=env,
                          capture_output=True, text=True, timeout=60)


def test_an_intact_bundle_opens(bundle):
    opened = open_bundle(bundle)
    assert opened.plan.variant == GOLDEN.name
    assert opened.solve_script_bytes == (GOLDEN / "oracle" / "solve.sh").read_bytes()


def test_a_mode_change_is_refused_by_open_bundle(bundle):
    (bundle / "oracle" / "solve.sh").chmod(0o644)  # same bytes, no longer executable
    with pytest.raises(BundleRefused, match=r"mode changed: oracle/solve\.sh"):
        open_bundle(bundle)


def test_arenac_run_refuses_a_bundle_whose_mode_changed(bundle, tmp_path):
    (bundle / "oracle" / "solve.sh").chmod(0o644)
    done = _arenac(tmp_path, "run", str(bundle), "--agent", "noop", "--time-scale", "0.1",
                   "--out", str(tmp_path / "work" / "run"))
    assert done.returncode == 3, done.stderr
    assert f"arenac: refusing to run: {bundle}: mode changed: oracle/solve.sh" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "work" / "run").exists() and not list((tmp_path / "state").iterdir())


def test_the_refusal_and_verify_bundle_name_the_same_findings(bundle, tmp_path):
    (bundle / "oracle" / "solve.sh").chmod(0o644)
    (bundle / "instruction.md").write_text("edited\n")
    (bundle / "extra.txt").write_text("x")
    checked = _arenac(tmp_path, "verify-bundle", str(bundle))
    assert checked.returncode == 3
    printed = [line.removeprefix(f"{bundle.as_posix()}: ") for line in checked.stderr.splitlines()]
    with pytest.raises(BundleRefused) as refused:
        open_bundle(bundle)
    assert str(refused.value) == f"{bundle}: " + "; ".join(printed)
    assert printed == ["altered: instruction.md", "mode changed: oracle/solve.sh", "not in manifest: extra.txt"]
