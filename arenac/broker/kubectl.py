"""The brokered `kubectl`: each invocation becomes the API requests real kubectl would send,
each request is authorised by the bundle's RBAC before anything happens, and the effect is
carried out on the LocalCluster.

Requests per command (what the API server sees, in order):
  get TYPE                       list TYPE                 (+ watch with -w; a `metadata.name`
  get TYPE NAME                  get TYPE NAME               field selector names the list)
  describe TYPE NAME             get TYPE NAME (+ list events, optional: skipped if denied)
  logs POD                       get pods POD; get pods/log POD
  logs deploy/X                  get deployments X; list pods; get pods/log POD
  exec POD -- CMD                get pods POD; create pods/exec POD (deploy/X: get deployments X and
                                 list pods first)
  patch TYPE NAME                patch TYPE NAME
  edit TYPE NAME                 get TYPE NAME; patch TYPE NAME
  set env|image deploy/X         get deployments X; patch deployments X
  rollout restart deploy/X       get deployments X; patch deployments X
  rollout status deploy/X        get, list, watch deployments X
  scale deploy/X --replicas=N    get deployments X; patch deployments/scale X
  delete pod P                   delete pods P       (-l SEL: list pods, then delete each)
The first denied request ends the call with the API server's Forbidden message (exit 1).
The commands themselves: kubectl_read.py and kubectl_write.py, over the per-call state and
authorisation of kubectl_session.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from arenac.broker.cluster import ClusterError
from arenac.broker.kubeargs import parse
from arenac.broker.kubectl_read import ReadCommands
from arenac.broker.kubectl_session import KUBECTL_VERSION, KubectlSession
from arenac.broker.kubectl_write import WriteCommands
from arenac.broker.outcome import Denied, Failed, ToolResult

__all__ = ["KUBECTL_VERSION", "Kubectl", "KubectlSession"]


class Kubectl(ReadCommands, WriteCommands):
    """One kubectl invocation (it keeps per-call state: make one per call)."""

    def run(self, argv: Sequence[str], stdin: bytes | None = None, edit_content: str | None = None) -> ToolResult:
        self._checked = []
        self._edit = None
        self._out = []
        self._err = []
        try:
            parsed = parse(argv)
            self._ns = parsed.value("namespace") or self.cluster.namespace
            self._all_ns = parsed.flag("all_namespaces") if "all_namespaces" in parsed.opts else False
            code = getattr(self, "_cmd_" + parsed.command.replace("-", "_"))(parsed, stdin, edit_content) or 0
            return self._result(code)
        except Denied as exc:
            self._err.append(str(exc))
            return self._result(1, allowed=False, reason=str(exc))
        except (Failed, ClusterError) as exc:
            self._err.append(str(exc))
            return self._result(getattr(exc, "code", 1))

    def _result(self, code: int, allowed: bool = True, reason: str = "") -> ToolResult:
        text = lambda parts: "".join(p if p.endswith("\n") else p + "\n" for p in parts)  # noqa: E731
        return ToolResult(code, text(self._out), text(self._err), allowed,
                          reason or "; ".join(r.describe() for r in self._checked), self._edit)
