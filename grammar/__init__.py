"""The .arena grammar, shipped as package data (arenac.grammar)."""
