"""Typed models shared between phases: pydantic models, and plain dataclasses for the loaded library.
Models import nothing but basics (pydantic and the core: source positions)."""
