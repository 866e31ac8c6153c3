"""A record written to disk as JSON (an evidence file, a qualification report): a model whose
named fields are left out of the file while they hold nothing.

`omitted_when_empty` names the fields a file format says are *absent* rather than null or empty
when there is nothing to say (a time a void trial never reached, the adversaries of a qualification
run without them). Their readers treat absent and empty alike; every other field is always
written, null included, so a record's bytes are exactly its format's.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import SerializerFunctionWrapHandler, model_serializer

from arenac.model.base import Model


class Record(Model):
    omitted_when_empty: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _leave_out_empty(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # a model's serialised fields: whatever each field's serializer gave (JSON data in mode="json")
        data: dict[str, Any] = handler(self)
        for name in self.omitted_when_empty:
            if name in data and (data[name] is None or data[name] == {}):
                del data[name]
        return data
