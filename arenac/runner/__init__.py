"""The runner: executes compiled bundles (plan.json + chart) as episodes and grades them.

It reads bundles only; it never imports the parser or the renderers.
"""
