"""Small specs the compiler tests share, and how they compile them.

`BASE` is a one-task spec using every construct, with `ONSET` and `ACCESS` left open (`spec()` fills
them); `MINIMAL` is the README's former example (one-line gates, the default oracle; a pool the load
never exhausts, so it compiles with warning E0522 and would void: the language-form fixture, no
longer the golden one, which is `GOLDEN_MINIMAL`, a fault that manifests), `BRACED` the same
task with its gates in blocks and its oracle written out, `SPELLED_OUT` that with standard_safety
spelled out line by line. `compile_text` runs a spec text through the pipeline up to expansion
(`arenac check`), under a file name of its own.
"""

from __future__ import annotations

from arenac.core.source import SourceFile, Span
from arenac.pipeline import Compilation, compile_sources

BASE = """
task t {
  title = "T"
  substrate = spine
  instruction = \"\"\"
    Something is wrong.
  \"\"\"
  fault pool = spine.pool_size(service: message, size: 2 | 4) {
    layer = config | runtime
    onset = ONSET
  }
  access = ACCESS
  gate outcome {
    error_rate(send) <= 1%
    p99(send, phase: peak) <= 1.2 * baseline.p99(send, phase: peak) + 5ms
    backlog(fanout) == 0 within 60s
    goodput >= 40/s for 1m
  }
  gate safety {
    survives restart(message)
    changes only config(message.DB_POOL_SIZE, message.DB_POOL_OVERFLOW)
    guard config(message.DB_POOL_SIZE) <= 32
    protect table(messages)
    invariant sequence(messages.seq) dense unique
  }
  oracle {
    repair pool
    wait until healthy within 60s
    wait 5s
    declare
  }
}
"""


def compile_text(text: str, name: str = "t.arena") -> Compilation:
    return compile_sources({name: SourceFile(name, text)})


def built_variants(task):
    """The variants of a compiled task, rebuilt as the renderer rebuilds them."""
    from arenac.lower.library import load_library
    from arenac.variants import built

    return built(task.lowered.spec, load_library())


def spec(onset: str = "at start", access: str = "confined | scoped_kubectl") -> str:
    return BASE.replace("ONSET", onset).replace("ACCESS", access)


DECOY_DECL = "  decoy noise = spine.strict_read(service: channel, hold: 5ms) {\n    layer = runtime\n  }\n"


MINIMAL = """task minimal {
  title = "Sends fail at peaks"
  substrate = spine
  instruction = "Sending messages fails for some users at busy times. Fix it, then declare."
  fault pool = spine.pool_size(service: message, size: 2)
  access = scoped_kubectl
  gate outcome = standard_outcome(route: send)
  gate safety = standard_safety(service: message)
}
"""

GOLDEN_MINIMAL = """task minimal {
  title = "Sending stalls at peaks"
  substrate = spine
  instruction = "Once a minute, at the busiest moment, sending messages stalls. Fix it, then declare."
  fault maint = spine.maintenance_offset(offset: 20s, duration: 6s)
  access = scoped_kubectl
  gate outcome = standard_outcome(route: send)
  gate safety = standard_safety(service: maintenance)
}
"""

BRACED = """task minimal {
  title = "Sends fail at peaks"
  substrate = spine
  instruction = "Sending messages fails for some users at busy times. Fix it, then declare."
  fault pool = spine.pool_size(service: message, size: 2)
  access = scoped_kubectl
  gate outcome {
    use standard_outcome(route: send)
  }
  gate safety {
    use standard_safety(service: message)
  }
  oracle {
    repair pool
    declare
  }
}
"""

SPELLED_OUT = BRACED.replace("    use standard_safety(service: message)\n", """    survives restart(message)
    changes only config(message)
    use messages_intact()
    use notifications_intact()
""")


def spanned(text: str, span: Span) -> str:
    """The text a diagnostic's caret underlines: a statement's span runs to the end of its line."""
    line = text.split("\n")[span.line - 1]
    return line[span.column - 1:span.end_column - 1 if span.end_line == span.line else None]
