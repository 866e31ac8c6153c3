"""The core every phase and the harness share: source positions (`source`), diagnostics with their
file, line and column (`diagnostics`), quantities and their units (`units`), and the one serializer
that makes artefacts byte-identical (`serialize`). It imports nothing else of arenac."""
