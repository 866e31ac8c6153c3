"""spine: the application under test (gateway, auth, channel, message, fanout, maintenance).

Contract: what the spine image runs (`python -m spine_services SERVICE --config PATH`), and all it
runs: the services, their configuration vocabulary (`keys`), how they read it (`configstore`) and
the releases they can be (`releases`). It imports nothing of arenac (an import-linter contract):
the harness drives it from outside, through its processes, ports and admin API
(arenac/substrate/spine/ is that driver).
"""
