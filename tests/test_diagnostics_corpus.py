"""The diagnostics corpus: each bad spec's exact `arenac check` output is pinned.

Refresh with `python tests/refresh.py` after an intended change, and review the diff.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from refresh import check_output

CORPUS = sorted((Path(__file__).parent / "diagnostics").glob("*.arena"))


@pytest.mark.parametrize("spec", CORPUS, ids=[p.stem for p in CORPUS])
def test_diagnostic_text_is_pinned(spec: Path):
    expected = spec.with_suffix(".expected").read_text(encoding="utf-8")
    assert check_output(spec) == expected


def test_corpus_covers_at_least_25_distinct_errors():
    messages = set()
    for spec in CORPUS:
        text = spec.with_suffix(".expected").read_text(encoding="utf-8")
        assert text.endswith("exit code: 1\n"), spec.name
        messages.update(re.findall(r"error\[(E\d{4})\]: (.*)", text))
    assert len(messages) >= 25
    codes = {code for code, _ in messages}
    # every static check has a failing example
    for code in ("E0403", "E0501", "E0502", "E0507", "E0508", "E0509", "E0301", "E0404"):
        assert code in codes, code
