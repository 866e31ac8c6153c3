"""Syntax: the .arena grammar, the parser and the syntax tree it produces."""
