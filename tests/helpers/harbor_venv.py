"""Harbor 0.25.0 for the export's tests (tests/export/): find its venv, or make one.

Harbor needs Python 3.12, arenac's venv is 3.11: Harbor lives in a venv of its own. `harbor_venv()`
returns its directory, or None with the reason in `why_no_harbor()`:

1. `$ARENAC_HARBOR_VENV` if set, else the cache `~/.cache/arenac/harbor-0.25.0`,
   the first whose `bin/harbor` exists and whose `harbor` package is 0.25.0;
2. else (when `make` is true) it creates the venv (`$ARENAC_HARBOR_VENV`, else the cache) with a Python 3.12 (pyenv's
   `~/.pyenv/versions/3.12*/bin/python`, else `python3.12` on PATH) and `pip install harbor==0.25.0`
   from PyPI; no Python 3.12: None.

`.ci/run` runs this file (`python tests/helpers/harbor_venv.py`) before the tests so that the test finds
the cache ready; it prints the venv, or why there is none, and how long it took. Standard library only.

`harbor lint` checks a compose file with `docker compose config`, which needs Docker's Compose
plugin (no engine): where the plugin is missing, `harbor lint` stops with exit 2 before it
checks anything. `lint_offline_script()` is then the fallback the test runs with Harbor's Python:
Harbor's own `lint_task` and rule selection, with only the `docker compose config` call replaced
(tests/helpers/harbor_lint_offline.py says how).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HARBOR_VERSION = "0.25.0"
CACHE = Path.home() / ".cache" / "arenac" / f"harbor-{HARBOR_VERSION}"
_why: list[str] = []


def _candidates() -> list[Path]:
    given = os.environ.get("ARENAC_HARBOR_VENV")
    return [Path(given)] if given else [CACHE]


def _version(venv: Path) -> str | None:
    try:
        result = subprocess.run([str(venv / "bin" / "python"), "-c",
                                 "import importlib.metadata as m; print(m.version('harbor'))"],
                                capture_output=True, text=True, timeout=60, check=False)
    except OSError:
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def python312() -> str | None:
    found = sorted(glob.glob(str(Path.home() / ".pyenv" / "versions" / "3.12*" / "bin" / "python")))
    return found[-1] if found else shutil.which("python3.12")


def harbor_venv(make: bool = True) -> Path | None:
    _why.clear()
    for venv in _candidates():
        if (venv / "bin" / "harbor").is_file() and _version(venv) == HARBOR_VERSION:
            return venv
    if not make:
        _why.append(f"no venv with harbor=={HARBOR_VERSION} at {', '.join(map(str, _candidates()))}")
        return None
    python = python312()
    if python is None:
        _why.append("no Python 3.12 (pyenv's ~/.pyenv/versions/3.12*, or python3.12 on PATH) to install Harbor "
                    f"{HARBOR_VERSION} with")
        return None
    target = _candidates()[-1]
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    steps = [[python, "-m", "venv", str(target)],
             [str(target / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", f"harbor=={HARBOR_VERSION}"]]
    for step in steps:
        result = subprocess.run(step, capture_output=True, text=True, timeout=900, check=False)
        if result.returncode != 0:
            _why.append(f"{' '.join(step)} failed: {(result.stderr or result.stdout).strip()[-300:]}")
            return None
    return target


def why_no_harbor() -> str:
    return "; ".join(_why) or "unknown"


def lint_offline_script() -> Path:
    return Path(__file__).with_name("harbor_lint_offline.py")


if __name__ == "__main__":
    started = time.monotonic()
    venv = harbor_venv()
    took = time.monotonic() - started
    if venv is None:
        print(f"harbor {HARBOR_VERSION}: none ({why_no_harbor()}); its tests will skip ({took:.0f}s)")
    else:
        print(f"harbor {HARBOR_VERSION}: {venv} ({took:.0f}s)")
    sys.exit(0)
