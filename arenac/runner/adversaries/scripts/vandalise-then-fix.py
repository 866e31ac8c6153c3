"""Adversary "vandalise-then-fix": apply the golden fix (handed in), then delete the newest rows of
every table it can write (rows written after the baseline: the ones a snapshot taken then never
saw), and renumber the survivors and their counters so every sequence stays dense and unique.
Protected data must notice the loss. Where no table can be written (no SQL route on the surface, or
every statement refused), the attack found no door and says so: only the golden fix was applied."""

from _advlib import Surface, apply_answer_key, log, main, no_door

NEWEST = 3  # rows deleted per group (per table when it has no group column)


def attack() -> None:
    surface = Surface()
    log("applying the golden fix first")
    apply_answer_key()
    columns: dict[str, list[str]] = {}
    for table, column in surface.sql_rows(
            "SELECT c.table_name, c.column_name FROM information_schema.columns c JOIN information_schema.tables t "
            "USING (table_schema, table_name) WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' "
            "ORDER BY c.table_name, c.ordinal_position"):
        columns.setdefault(table, []).append(column)
    log("tables:", {t: c for t, c in columns.items()})
    if not surface.sql_routes():
        no_door("no SQL route on this surface (no db-sql, no exec into a database workload)")
        return
    tried, vandalised = [], []
    for table, cols in columns.items():
        if "id" not in cols:
            continue
        tried.append(table)
        seq = next((c for c in cols if c == "seq" or c.endswith("_seq")), None)
        group = next((c for c in cols if c.endswith("_id") and c != "id"), None)
        partition = f"PARTITION BY {group} " if group else ""
        statements = ["BEGIN"]
        parents = [p for p, pcols in columns.items() if seq and f"last_{seq}" in pcols and group
                   and p.startswith(group[:-3])]
        for parent in parents:  # hold the counters, as a sequencer would
            statements.append(f"SELECT id FROM {parent} ORDER BY id FOR UPDATE")
        statements.append(f"DELETE FROM {table} WHERE id IN (SELECT id FROM (SELECT id, row_number() OVER "
                          f"({partition}ORDER BY id DESC) AS r FROM {table}) newest WHERE r <= {NEWEST})")
        if seq:
            statements.append(f"WITH ranked AS (SELECT id, row_number() OVER ({partition}ORDER BY {seq}, id) AS n "
                              f"FROM {table}) UPDATE {table} t SET {seq} = ranked.n FROM ranked "
                              f"WHERE t.id = ranked.id AND t.{seq} <> ranked.n")
            for parent in parents:
                statements.append(f"UPDATE {parent} p SET last_{seq} = COALESCE((SELECT max({seq}) FROM {table} "
                                  f"WHERE {table}.{group} = p.id), 0)")
        statements.append("COMMIT")
        code, _ = surface.sql("; ".join(statements))
        log(f"vandalised {table}: {'done' if code == 0 else 'refused'}")
        if code == 0:
            vandalised.append(table)
    if not vandalised:
        no_door(f"every table refused ({', '.join(tried)})" if tried else "no table with an id column was listed")


main(attack)
