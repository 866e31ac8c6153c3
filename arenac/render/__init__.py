"""Render: one variant -> the files of its bundle, as `{relative path: text}`.

Kubernetes objects and Helm values are built as data and dumped by `arenac.core.serialize`;
Jinja renders only files that really are text (scripts, instruction, verifier entry
point), with StrictUndefined and no logic beyond loops over prepared lists.
"""
