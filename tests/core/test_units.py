"""Quantities (arenac.core.units) are written back as an author writes them."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("value, dimension, text", [
    (1024, "size", "1Ki"), (1024**3, "size", "1Gi"), (1536, "size", "1.5Ki"), (0.001, "duration", "1ms"),
    (600, "duration", "10m"), (5400, "duration", "90m"), (1.5, "duration", "1500ms"), (0, "duration", "0s"),
    (0.05, "fraction", "5%"), (40, "rate", "40/s"), (1e9, "number", "1000000000"), (0.5, "number", "0.5"),
])
def test_quantities_are_formatted_as_an_author_writes_them(value, dimension, text):
    from arenac.core.units import Dimension, format_quantity

    assert format_quantity(value, Dimension(dimension)) == text
