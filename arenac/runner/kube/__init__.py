"""The Kubernetes backend's cluster-side machinery (issue 13; docs/kubernetes.md, "A trial on the
cluster"): what a trial creates on a cluster and how it is undone.

- `names`: a trial's two namespaces (application, harness) and their labels, from the trial id.
- `api`: the connection (the official `kubernetes` client) and the errors every module raises.
- `namespaces`: create a trial's namespaces (refusing another trial's), delete them and wait.
- `agent_access`: the bundle's RBAC applied into the application namespace, the agent's
  short-lived token (TokenRequest) and its kubeconfig, and the revocation at the freeze.
- `records`: the live-trial records, the leftovers an interrupted run left, and their cleanup.
- `install`: the bundle's chart installed into the trial's namespaces (`install_chart`: rendered
  with Helm's engine, created in Helm's install order, only the runner's values overridden
  (`RunnerValues`), anything cluster-scoped or outside the two namespaces refused before a create;
  `InstallFailed`), and `uninstall` (every object of the trial's namespaces, then the namespaces;
  safe after a partial install and twice).
- `workloads`: `wait_ready` (bounded; `InstallTimeout` names each workload not ready and what its
  pods wait on, `WorkloadFailed` a failed Job) and `restart_workload` (the restart challenge: a
  rollout restart with the runner's credentials, then the new rollout ready; `RestartTimeout`;
  told the workload's kind, it patches only that kind).
- `harness_pod`: what the runner creates for a trial's harness pod, which runs `arenac harness
  episode` beside the substrate (`harness_pod_objects`: the bundle as an immutable ConfigMap mounted
  so that it passes its manifest check, the broker's token and the substrate's credentials as
  Secrets, a ServiceAccount with a Role of exactly the episode's rights in the application
  namespace, a Service and a NetworkPolicy opening only the broker port, the Pod; deterministic),
  `read_substrate_credentials` (the keys the driver names, read with the runner's credentials),
  `api_server_endpoints`, and `create_harness_pod` (in Helm's install order; `HarnessPodFailed`).
  Made by the runner, not the chart: they hold the trial's own token, credentials and bundle. `install.uninstall`
  removes them with the rest.
- `streams`: the runner's streams into the harness pod: a command by exec (`PodExec`), the agent's
  route to the pod's broker (`BrokerRoutes`: a port-forward; `UnixRelay`, the unix socket the tool
  clients call), and the graded run fetched as an archive.
- `cluster_trial`: one trial on a cluster (`run_cluster_trial`, called by the worker for
  `--backend kubernetes`): the pieces above composed around the harness pod, every failure an
  infra_error with its namespaces uninstalled, `cluster.json` written into the run directory.

Nothing here is on `arenac check`'s path: the CLI imports the runner only in its commands, and the
`kubernetes` client itself is imported inside the functions that call it (`api.k8s()`), so that
importing this package costs nothing. The compiler never imports it (import-linter:
`compiler-without-the-cluster`). No function here creates a cluster-scoped object but the trial's
two namespaces, nor anything outside them (`harness_pod` reads the API server's endpoints in
`default`, and creates nothing there).
"""
