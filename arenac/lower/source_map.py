"""Where a task's parts were written: the source map lowering leaves for the later checks.

Contract: lowering fills one `SourceMap` per task while it resolves the task; the checks after
lowering (`arenac.validate`) point their diagnostics at these spans. A part the map does not
hold (a default, a check a macro produced) is reported at the task's name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from arenac.core.source import Span


@dataclass
class SourceMap:
    task: Span  # the task's name
    settings: dict[str, Span] = field(default_factory=dict)  # title, substrate, soak, ... by key: their value
    faults: dict[str, Span] = field(default_factory=dict)  # a fault (or decoy) by name: its name
    onsets: dict[str, Span] = field(default_factory=dict)  # a fault's onset, or its name when it has none
    recurs: dict[str, Span] = field(default_factory=dict)  # a fault's `recur`
    access: dict[str, Span] = field(default_factory=dict)  # each alternative of `access = ...`
    repairs: dict[str, Span] = field(default_factory=dict)  # the oracle's repair of a fault (default oracle: the fault)
    safety: dict[int, Span] = field(default_factory=dict)  # a safety check by its index in the lowered gate
    oracle: Span | None = None  # the `oracle { }` block; None when the task uses the default oracle
    healthy: dict[str, Span] = field(default_factory=dict)  # a `healthy` setting by SERVICE.KEY: its config(...)
