"""A matrix cell names a quantity argument in the unit an author writes (`256Ki`, `350ms`), not
in base units; names and whole numbers as written; the cell still picks the value it names."""

from __future__ import annotations

from helpers.specs import built_variants, compile_text

UNITS_SPEC = """task units {
  title = "Queue memory"
  substrate = spine
  instruction = "Unread counts stall. Fix it, then declare."
  fault FAULT {
    layer = runtime
  }
  access = shell
  gate outcome = standard_outcome(route: send)
  gate safety {
    survives restart(message, redis)
  }
}
"""


def _cells(fault: str) -> dict[str, dict]:
    task = compile_text(UNITS_SPEC.replace("FAULT", fault)).tasks[0]
    return {v.id: (dict(v.coordinates), v.faults[0].args) for v in built_variants(task)}


def test_sizes_are_named_in_ki_mi_gi_and_pick_their_bytes():
    cells = _cells("mem = spine.redis_maxmemory(size: 256Ki | 1Mi)")
    assert sorted((c["mem.size"], args["size"]) for c, args in cells.values()) == [
        ("1Mi", 1048576.0), ("256Ki", 262144.0)]


def test_durations_are_named_in_ms_s_m():
    cells = _cells("strict = spine.strict_read(service: channel, hold: 350ms | 2s)")
    assert sorted(c["strict.hold"] for c, _ in cells.values()) == ["2s", "350ms"]


def test_whole_numbers_and_names_are_named_as_written():
    cells = _cells("pool = spine.pool_size(service: message, size: 2 | 3, route: send | read)")
    assert sorted((c["pool.size"], c["pool.route"]) for c, _ in cells.values()) == [
        ("2", "read"), ("2", "send"), ("3", "read"), ("3", "send")]
