"""The one dispatch over the action union: each kind reaches its own method, every consumer in
arenac handles every kind, and the type checker refuses a consumer that leaves one out."""

from __future__ import annotations

import importlib
import textwrap
from pathlib import Path
from typing import get_args

import pytest
from mypy import api as mypy_api

from arenac.model.actions import (
    ActionHandler,
    AdminAction,
    AnyAction,
    KubectlAction,
    RedisAction,
    SendBurstAction,
    SqlAction,
    ValuesAction,
    dispatch,
)

ONE_OF_EACH: list[AnyAction] = [
    ValuesAction(path="services.message.config.DB_POOL_SIZE", value=5),
    KubectlAction(verb="scale", service="message", replicas=2),
    AdminAction(service="message", path="/admin/config", body={"X": 1}),
    SqlAction(role="spine_app", statement="SELECT 1"),
    RedisAction(command=("PING",)),
    SendBurstAction(channel="general", messages=3, concurrency=1),
]
# the modules whose handlers consume the union (importing them registers their handler classes)
CONSUMERS = ("arenac.model.actions", "arenac.channels", "arenac.render.oracle", "arenac.validate",
             "arenac.runner.harness_io")


class Which(ActionHandler[str]):
    """Answers with the name of the method dispatch called."""

    def on_values(self, action: ValuesAction) -> str:
        return "on_values"

    def on_kubectl(self, action: KubectlAction) -> str:
        return "on_kubectl"

    def on_admin(self, action: AdminAction) -> str:
        return "on_admin"

    def on_sql(self, action: SqlAction) -> str:
        return "on_sql"

    def on_redis(self, action: RedisAction) -> str:
        return "on_redis"

    def on_send_burst(self, action: SendBurstAction) -> str:
        return "on_send_burst"


def handler_methods() -> set[str]:
    return {name for name in vars(ActionHandler) if name.startswith("on_")}


def test_every_kind_of_the_union_is_in_the_examples() -> None:
    assert {type(action) for action in ONE_OF_EACH} == set(get_args(AnyAction))


@pytest.mark.parametrize("action", ONE_OF_EACH, ids=lambda a: a.kind)
def test_each_kind_reaches_the_method_named_after_it(action: AnyAction) -> None:
    assert dispatch(action, Which()) == f"on_{action.kind}"


def test_the_protocol_has_one_method_per_kind() -> None:
    assert handler_methods() == {f"on_{action.kind}" for action in ONE_OF_EACH}


def test_every_consumer_in_arenac_defines_every_method() -> None:
    for module in CONSUMERS:
        importlib.import_module(module)
    consumers = [cls for cls in ActionHandler.__subclasses__() if cls.__module__.startswith("arenac.")]
    assert {cls.__module__ for cls in consumers} == set(CONSUMERS)
    for cls in consumers:
        missing = {name for name in handler_methods() if getattr(cls, name) is getattr(ActionHandler, name)}
        assert not missing, f"{cls.__module__}.{cls.__name__} lacks {sorted(missing)}"


def test_a_consumer_that_leaves_a_kind_out_cannot_be_made() -> None:
    class Partial(Which):
        pass

    Partial()  # a subclass of a complete handler is complete

    class Missing(ActionHandler[str]):
        def on_values(self, action: ValuesAction) -> str:
            return ""

    with pytest.raises(TypeError, match="abstract"):
        Missing()  # type: ignore[abstract]  # the type checker refuses it too (below)


def test_the_type_checker_refuses_a_consumer_that_leaves_a_kind_out(tmp_path: Path) -> None:
    methods = "\n".join(f"    def {name}(self, action: Any) -> str:\n        return ''" for name in sorted(
        handler_methods()))
    complete = f"class Complete(ActionHandler[str]):\n{methods}\n"
    partial = "class Partial(ActionHandler[str]):\n" + "\n".join(
        f"    def {name}(self, action: Any) -> str:\n        return ''" for name in sorted(handler_methods())
        if name != "on_send_burst") + "\n"
    source = tmp_path / "consumer.py"
    source.write_text(textwrap.dedent("""\
        from typing import Any

        from arenac.model.actions import ActionHandler, AnyAction, dispatch

        """) + complete + "\n\n" + partial + textwrap.dedent("""\


        def both(action: AnyAction) -> tuple[str, str]:
            return dispatch(action, Complete()), dispatch(action, Partial())
        """), encoding="utf-8")
    report, _, status = mypy_api.run(["--no-incremental", "--cache-dir", str(tmp_path / "cache"), "--follow-imports",
                                      "silent", "--ignore-missing-imports", str(source)])
    errors = [line for line in report.splitlines() if ": error:" in line]
    assert status == 1 and len(errors) == 1, report
    assert 'Cannot instantiate abstract class "Partial" with abstract attribute "on_send_burst"' in errors[0]
