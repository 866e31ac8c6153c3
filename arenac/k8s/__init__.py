"""Kubernetes-facing checks over compiled bundles, all offline.

`helm` renders a chart directory into Kubernetes objects, `schema` validates objects
against the API schemas of the Kubernetes versions we support, and `rbac_lint` holds
the agent's RBAC to least privilege. Each module imports its third-party library only
when called, so importing `arenac.k8s` stays cheap.
"""
