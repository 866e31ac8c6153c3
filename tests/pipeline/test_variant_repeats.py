"""A mistake the checks find alike in several variants of a task is reported once, "(in N
variants)" (arenac.pipeline.expand_tasks); one found in a single variant still names it."""

from __future__ import annotations

import pytest

from arenac.core.diagnostics import DiagnosticError
from helpers.specs import compile_text

SPEC = """task t {
  title = "Sends fail at peaks"
  substrate = spine
  instruction = "Sending messages fails for some users at busy times. Fix it, then declare."
  fault pool = spine.pool_size(service: message, size: SIZES) {
    layer = config
  }
  access = ACCESS
  gate outcome = standard_outcome(route: send)
  gate safety {
    survives restart(message)
    guard config(message.DB_POOL_SIZE) <= 8
  }
}
"""


def _messages(sizes: str, access: str) -> list[str]:
    with pytest.raises(DiagnosticError) as caught:
        compile_text(SPEC.replace("SIZES", sizes).replace("ACCESS", access))
    return [d.message for d in caught.value.diagnostics]


def test_a_mistake_in_every_variant_is_reported_once_with_the_count():
    [message] = _messages("2 | 3", "shell | scoped_kubectl")
    assert message.endswith("= 20) (in 4 variants)") and "(variant" not in message


def test_a_mistake_in_one_variant_names_that_variant():
    [message] = _messages("2", "shell")
    assert message.endswith("= 20) (variant pool.layer=config, access=shell)")
