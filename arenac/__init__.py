"""arenac: compile live-incident benchmark specs into runnable bundles, and run them."""

__version__ = "0.1.0"
