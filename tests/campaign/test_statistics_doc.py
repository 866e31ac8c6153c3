"""docs/statistics.md's example runs as shown: its Python block prints its text block."""

from __future__ import annotations

import re
import subprocess
import sys

from helpers import ROOT

DOC = ROOT / "docs" / "statistics.md"


def test_the_example_prints_what_the_page_shows() -> None:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(r"```python\n(?P<code>.*?)```\n.*?```text\n(?P<output>.*?)```", text, re.DOTALL)
    assert match, "docs/statistics.md has no ```python block followed by a ```text block"
    run = subprocess.run([sys.executable, "-c", match["code"]], capture_output=True, text=True, timeout=120,
                         check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout == match["output"]
