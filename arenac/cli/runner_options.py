"""What the commands that run episodes share (`arenac run`, `qualify`, `campaign`): refusals as one
line, and the options of the agent's isolation (docs/security.md).

Contract: `RunnerCommand` turns click's own refusals (a bad option value, a missing argument, a
path that does not exist) into one line `arenac: ...` on stderr, exit 2, as `OneLineUsageError`
does for the commands' own; `isolation_options` adds --sandbox, --agent-network and --agent-ro,
and `isolation(...)` makes their `Isolation`; `backend_options` adds --backend, --kubeconfig and
--context, `cluster_problem(...)` says in one line why they cannot run (the kubeconfig loaded,
its context found: the Kubernetes client is imported only for `--backend kubernetes`), and
`cluster_target(...)` makes their `ClusterTarget` (None: local). Light: the runner's options module
only.
"""

from __future__ import annotations

from pathlib import Path

import click


class OneLineUsageError(click.UsageError):
    """A usage error as one line on stderr (`arenac: ...`), exit 2: what the runner's commands
    print for every input they refuse before starting anything (docs/runner.md)."""

    def show(self, file=None) -> None:
        click.echo(f"arenac: {self.format_message()}", err=True, file=file)


class RunnerCommand(click.Command):
    """The runner commands: click's own refusals (a bad option value, a missing
    argument, a bundle path that does not exist) as one line instead of usage + hint + error."""

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as error:
            raise OneLineUsageError(error.format_message(), ctx) from None


def isolation_options(command):
    """--sandbox, --agent-network, --agent-ro: how the agent is confined (docs/security.md)."""
    command = click.option("--agent-ro", "agent_ro", multiple=True, type=click.Path(file_okay=False, exists=True),
                           help="A directory the agent's own program needs, bound read-only into its sandbox "
                                "(repeatable).")(command)
    command = click.option("--agent-network", type=click.Choice(["private", "host"]), default="private",
                           show_default=True, help="private: the agent reaches only its tools; host: this "
                                                   "machine's network too (e.g. a model API).")(command)
    return click.option("--sandbox", type=click.Choice(["auto", "bwrap", "none"]), default="auto",
                        show_default=True, help="The agent's sandbox (auto: bubblewrap where it works, "
                                                "else none, with a warning).")(command)


def isolation(sandbox, agent_network, agent_ro):
    from arenac.runner.options import Isolation  # lazily: only the commands that run episodes need it

    return Isolation(sandbox=sandbox, agent_network=agent_network,
                     agent_ro=tuple(Path(p).resolve() for p in agent_ro))


def backend_options(command):
    """--backend, --kubeconfig, --context: where the trial runs (docs/kubernetes.md, "The runner's side
    of a trial")."""
    command = click.option("--context", default=None, metavar="NAME",
                           help="The kubeconfig's context (default: its current one); --backend kubernetes "
                                "only.")(command)
    command = click.option("--kubeconfig", default=None, type=click.Path(dir_okay=False), metavar="PATH",
                           help="The cluster's kubeconfig (default: $KUBECONFIG or ~/.kube/config); "
                                "--backend kubernetes only.")(command)
    return click.option("--backend", type=click.Choice(["local", "kubernetes"]), default="local", show_default=True,
                        help="local: this machine's processes; kubernetes: one trial's namespaces on a "
                             "cluster.")(command)


def cluster_problem(backend: str, kubeconfig: Path | None, context: str | None,
                    file_keys: bool = False) -> str | None:
    """Why these backend settings cannot run (one line), before anything starts; None when they can
    (`file_keys`: said with a campaign file's keys rather than the command's options).
    For the kubernetes backend the kubeconfig is loaded and its context found (a file that is not
    YAML, a context it lacks: the file named), so that a mistake is a refusal, not an infra_error
    minutes later. Imports the client only then."""
    if backend != "kubernetes":
        if kubeconfig is not None or context is not None:
            return ("kubeconfig and context are for backend = \"kubernetes\"" if file_keys
                    else "--kubeconfig and --context are for --backend kubernetes")
        return None
    from arenac.extras import importable  # light: a module lookup, nothing imported

    if not importable("kubernetes"):
        named = "backend = kubernetes" if file_keys else "--backend kubernetes"
        return f"{named} needs the Kubernetes client, which is not installed: pip install 'arenac[kubernetes]'"
    from arenac.runner.kube.api import KubeError, connect  # lazily: only this backend needs it

    try:
        connect(kubeconfig, context).close()
    except KubeError as error:
        return str(error)
    return None


def cluster_target(backend: str, kubeconfig: Path | None, context: str | None):
    """The `ClusterTarget` of these settings (after `cluster_problem` said none), or None for local."""
    if backend != "kubernetes":
        return None
    from arenac.runner.options import ClusterTarget  # lazily, as isolation()

    return ClusterTarget(kubeconfig=kubeconfig.resolve() if kubeconfig is not None else None, context=context)
