{{/* Labels of every object; `component` is the service (or postgres, redis). */}}
{{- define "spine.labels" -}}
app.kubernetes.io/name: spine
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .version | quote }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end }}

{{/* Selector labels: stable across releases of the chart. */}}
{{- define "spine.selector" -}}
app.kubernetes.io/name: spine
app.kubernetes.io/component: {{ . }}
{{- end }}

{{/* A password: sha256(seed/role), the seed defaulting to namespace/release (see values.yaml). */}}
{{- define "spine.password" -}}
{{- $seed := .root.Values.credentials.seed | default (printf "%s/%s" .root.Release.Namespace .root.Release.Name) -}}
{{- printf "%s/%s" $seed .role | sha256sum | trunc 32 -}}
{{- end }}
