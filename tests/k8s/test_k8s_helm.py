"""render_chart over a tiny chart built in tmp_path, with a subchart under charts/."""

from __future__ import annotations

from pathlib import Path

import pytest

from arenac.k8s.helm import HelmRenderError, render_chart

FILES = {
    "Chart.yaml": """\
apiVersion: v2
name: demo
version: 0.1.0
dependencies:
  - name: extra
    version: 0.2.0
    condition: extra.enabled
""",
    "values.yaml": """\
replicas: 1
image: web:1.0
greeting: hello
extra:
  enabled: true
  color: blue
""",
    "templates/_helpers.tpl": """\
{{- define "demo.labels" -}}
app: {{ .Release.Name }}
{{- end -}}
""",
    "templates/NOTES.txt": "Installed {{ .Release.Name }}.\n",
    "templates/00-service.yaml": """\
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-web
  namespace: {{ .Release.Namespace }}
spec:
  selector:
    {{- include "demo.labels" . | nindent 4 }}
  ports:
    - port: 80
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: zz-early
  namespace: aaa
""",
    "templates/configmap.yaml": """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  namespace: {{ .Release.Namespace }}
  annotations:
    rolled: 2024-01-02
data:
  greeting: {{ .Values.greeting | quote }}
""",
    "templates/deployment.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "demo.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      {{- include "demo.labels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "demo.labels" . | nindent 8 }}
    spec:
      containers:
        - name: web
          image: {{ .Values.image | quote }}
""",
    "charts/extra/Chart.yaml": "apiVersion: v2\nname: extra\nversion: 0.2.0\n",
    "charts/extra/values.yaml": "color: red\n",
    "charts/extra/templates/configmap.yaml": """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: extra-{{ .Values.color }}
  namespace: {{ .Release.Namespace }}
""",
}


@pytest.fixture
def chart(tmp_path: Path) -> Path:
    root = tmp_path / "demo"
    for relative, text in FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def identities(objects: list[dict]) -> list[tuple[str, str, str]]:
    return [(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objects]


def by_name(objects: list[dict], kind: str, name: str) -> dict:
    [found] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def test_renders_chart_and_subchart_sorted(chart: Path) -> None:
    objects = render_chart(chart, release="shop", namespace="team")
    # Sorted by kind, namespace, name: not in template or document order.
    assert identities(objects) == [
        ("ConfigMap", "aaa", "zz-early"),
        ("ConfigMap", "team", "extra-blue"),  # the parent's values reach the subchart
        ("ConfigMap", "team", "shop-config"),
        ("Deployment", "team", "shop-web"),
        ("Service", "team", "shop-web"),
    ]
    deployment = by_name(objects, "Deployment", "shop-web")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["selector"]["matchLabels"] == {"app": "shop"}
    assert deployment["spec"]["template"]["spec"]["containers"] == [{"name": "web", "image": "web:1.0"}]
    config = by_name(objects, "ConfigMap", "shop-config")
    assert config["data"] == {"greeting": "hello"}
    # A timestamp-looking scalar stays a string, as Kubernetes reads it.
    assert config["metadata"]["annotations"] == {"rolled": "2024-01-02"}


def test_values_override_defaults_in_chart_and_subchart(chart: Path) -> None:
    objects = render_chart(chart, values={"replicas": 3, "greeting": "hi", "extra": {"color": "green"}})
    assert by_name(objects, "Deployment", "arenac-web")["spec"]["replicas"] == 3
    pod = by_name(objects, "Deployment", "arenac-web")["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "web:1.0"
    assert by_name(objects, "ConfigMap", "arenac-config")["data"] == {"greeting": "hi"}
    assert "extra-green" in {o["metadata"]["name"] for o in objects}
    assert {o["metadata"]["namespace"] for o in objects} == {"aaa", "arenac"}


def test_subchart_condition_is_honoured_on_every_call(chart: Path) -> None:
    off = render_chart(chart, values={"extra": {"enabled": False}})
    assert [o["metadata"]["name"] for o in off] == ["zz-early", "arenac-config", "arenac-web", "arenac-web"]
    # helm-python-sdk drops a disabled subchart from a loaded chart handle; a later
    # render must still see it, so render_chart loads the chart afresh each time.
    on = render_chart(chart, values={"extra": {"enabled": True}})
    assert "extra-blue" in {o["metadata"]["name"] for o in on}


def test_rendering_twice_is_identical(chart: Path) -> None:
    first = render_chart(chart, values={"replicas": 2})
    second = render_chart(chart, values={"replicas": 2})
    assert first == second
    assert [list(o) for o in first] == [list(o) for o in second]


def test_template_error_names_the_chart_by_relative_path(chart: Path, monkeypatch) -> None:
    (chart / "templates" / "broken.yaml").write_text('x: {{ required "need foo" .Values.foo }}\n')
    monkeypatch.chdir(chart.parent)
    with pytest.raises(HelmRenderError) as caught:
        render_chart(chart)
    assert caught.value.message.startswith("demo: ")
    assert "need foo" in caught.value.message
    assert str(chart.parent) not in caught.value.message


def test_missing_chart_message_has_no_absolute_path(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(HelmRenderError) as caught:
        render_chart(tmp_path / "absent")
    assert caught.value.message.startswith("absent: HelmChartLoadError: ")
    assert "/" not in caught.value.message  # the library's absolute path was made relative


def test_document_without_name_is_rejected(chart: Path) -> None:
    (chart / "templates" / "anonymous.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n")
    with pytest.raises(HelmRenderError, match=r"anonymous\.yaml document 0 has no metadata\.name"):
        render_chart(chart)


def test_values_must_be_json_data(chart: Path) -> None:
    with pytest.raises(HelmRenderError, match="values are not plain JSON data"):
        render_chart(chart, values={"replicas": object()})
