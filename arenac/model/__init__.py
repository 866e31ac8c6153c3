"""Typed models shared between phases (pydantic). Models import nothing but basics."""
