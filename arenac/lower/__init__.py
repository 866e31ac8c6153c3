"""Lowering: syntax tree -> typed IR, resolving names and checking units.

Each module lowers one kind of construct and reports into a shared `Collector`, so
that a whole file's resolution and type errors are reported together. `library` loads
the standard library: it parses and lowers the library's modules, so it lives here, and
hands every later phase plain data (`arenac.model.library`).
"""
