"""Jinja environment for the text artefacts (package templates in arenac/templates)."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=1)
def environment():
    import jinja2  # lazily: `arenac check` never renders, and Jinja is the slowest import of a compile

    return jinja2.Environment(
        loader=jinja2.PackageLoader("arenac", "templates"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_text(template: str, **context) -> str:
    return environment().get_template(template).render(**context)
