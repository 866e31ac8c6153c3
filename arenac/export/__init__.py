"""Export compiled bundles as Harbor tasks (`arenac export harbor`; docs/harbor.md).

One Harbor task per variant: `task.toml`, `instruction.md`, `environment/` (a compose file with the
agent's `main` container, which holds only the brokered tool clients, and a `harness` container,
which holds the whole bundle and runs the episode), `solution/solve.sh` (the bundle's oracle),
`tests/` (a verifier image that transcribes the harness's verdict into Harbor's reward.json) and
`arenac-export.json` (what was exported: variant, bundle digest, every file's sha256 and mode).

Modules: `models.py` (the typed content of task.toml, the identity file and the dataset
manifest), `toml.py` (a deterministic TOML writer for them), `timing.py` (timeouts from the plan),
`transcribe.py` (the verifier's transcriber,
shipped as source), `task.py` (one variant's files), `harbor.py` (inputs, the export tree, the
dataset manifest, `--check`). The package reads bundles through `arenac.bundle` and the plan model;
it never imports the runner (an import-linter contract in pyproject.toml). The agent's tool clients
are written by the broker's one writer, `arenac.broker.clients`.
"""
