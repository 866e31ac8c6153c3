"""`arenac variants` prints a quantity argument in the unit an author writes (`256Ki`, not
`262144`), in the table and in its JSON."""

from __future__ import annotations

import json
import re

from helpers.pinned import check_output_of

SPEC = """task units {
  title = "Queue memory"
  substrate = spine
  instruction = "Unread counts stall. Fix it, then declare."
  fault mem = spine.redis_maxmemory(size: 256Ki | 1Mi) {
    layer = runtime
  }
  access = shell
  gate outcome = standard_outcome(route: send)
  gate safety {
    survives restart(message, redis)
    use notifications_intact()  # else a restart of Redis is the whole repair (warning E0528)
  }
}
"""


def test_the_table_and_json_name_sizes_in_the_spec_units(tmp_path):
    path = tmp_path / "units.arena"
    path.write_text(SPEC, encoding="utf-8")
    table = re.sub(r"units-[0-9a-f]{8}", "units-ID", check_output_of(str(path), command=["variants"]))
    assert table.splitlines()[1:3] == [
        "units  units-ID  mem.layer=runtime, mem.size=256Ki, access=shell  built",
        "units  units-ID  mem.layer=runtime, mem.size=1Mi, access=shell    built",
    ]
    rows = json.loads(check_output_of(str(path), command=["variants", "--format", "json"]).rsplit("exit code", 1)[0])
    assert [row["coordinates"]["mem.size"] for row in rows] == ["256Ki", "1Mi"]
