"""Tests of the spine substrate (a package, so that its conftest and modules get unique names)."""
