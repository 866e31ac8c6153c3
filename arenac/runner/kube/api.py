"""The connection to a cluster, and the errors of the cluster machinery.

Contract:

- `k8s()` is the official client's `kubernetes.client` module, imported on first use (it takes a
  noticeable fraction of a second; `arenac check` must not pay it).
- `connect(kubeconfig, context)` is an `ApiClient` for that kubeconfig file (None: the client's
  default, `$KUBECONFIG` or `~/.kube/config`) and context (None: its current context). A file or
  context that cannot be loaded raises `KubeError` naming it, in one line: a file that is missing
  or unreadable, not YAML (with the parser's line), not a mapping, without that context (the
  contexts it has are named) or without a current one; the client's own refusals likewise.
  `check_kubeconfig(kubeconfig, context)` is that check alone, before the client is imported (the
  CLI's refusal, exit 2).
- `server_of(api)` is the API server's URL the client talks to (what a record and a kubeconfig
  name the cluster by).
- `status_of(error)` is the HTTP status of an exception the client raised for an API answer, else
  None (a connection error, anything else); `describe(error)` is one line for a message (`HTTP 403
  Forbidden`; the text of any other exception).
- `KubeError` is every refusal and failure of this package, with a message a user can act on;
  `NamespaceTaken` and `TeardownTimeout` are the two a caller may want to tell apart.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


class KubeError(Exception):
    """The cluster refused, failed, or was asked for something this package will not do."""


class NamespaceTaken(KubeError):
    """A trial namespace already exists and is not this trial's."""


class TeardownTimeout(KubeError):
    """Namespaces still there when the bounded wait for their deletion ended."""

    def __init__(self, message: str, remaining: tuple[str, ...]) -> None:
        super().__init__(message)
        self.remaining = remaining


def k8s() -> ModuleType:
    # imported here, not at the top: the client's import is heavy and `arenac check` must stay fast
    import kubernetes.client

    return kubernetes.client


def check_kubeconfig(kubeconfig: Path | None, context: str | None) -> None:
    """Refuse a kubeconfig the client would fail on with a traceback (its parser's exceptions are not
    its ConfigException): read and parsed here, in one line naming the file."""
    import yaml

    if kubeconfig is None:  # the client's default: its own lookup, its own ConfigException
        return
    where = str(kubeconfig)
    try:
        text = kubeconfig.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise KubeError(f"cannot use {where}: {getattr(error, 'strerror', None) or error}") from error
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(error, "problem", None) or type(error).__name__
        raise KubeError(f"cannot use {where}: not YAML{at}: {problem}") from error
    if not isinstance(config, dict):
        raise KubeError(f"cannot use {where}: not a kubeconfig (a YAML mapping with clusters, users and contexts)")
    contexts = [c.get("name") for c in config.get("contexts") or [] if isinstance(c, dict)]
    wanted = context or config.get("current-context")
    if not wanted:
        raise KubeError(f"cannot use {where}: it has no current-context; name one with --context "
                        f"({', '.join(map(str, contexts)) or 'it has none'})")
    if wanted not in contexts:
        raise KubeError(f"cannot use {where}: it has no context {wanted!r} (it has: "
                        f"{', '.join(map(str, contexts)) or 'none'})")


def connect(kubeconfig: Path | None = None, context: str | None = None) -> ApiClient:
    check_kubeconfig(kubeconfig, context)
    # imported here for the same reason as in k8s()
    import kubernetes.config

    try:
        client: ApiClient = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]  # unannotated
            config_file=str(kubeconfig) if kubeconfig is not None else None, context=context)
    except (kubernetes.config.ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError) as error:
        # TypeError, KeyError, AttributeError: the client indexes a kubeconfig of the wrong shape unchecked
        where = str(kubeconfig) if kubeconfig is not None else "the default kubeconfig"
        which = f" (context {context})" if context else ""
        message = " ".join(str(error).split()) or type(error).__name__
        raise KubeError(f"cannot use {where}{which}: {message}") from error
    return client


def server_of(api: ApiClient) -> str:
    return str(api.configuration.host)


def status_of(error: BaseException) -> int | None:
    if isinstance(error, k8s().ApiException):
        return int(error.status) if error.status is not None else None
    return None


def describe(error: BaseException) -> str:
    status = status_of(error)
    if status is None:
        return str(error) or type(error).__name__
    return f"HTTP {status} {getattr(error, 'reason', '') or ''}".rstrip()
