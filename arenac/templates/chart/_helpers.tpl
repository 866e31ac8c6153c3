{{/* Names shared by the harness templates. */}}
{{- define "arenac.harnessLabels" -}}
app.kubernetes.io/managed-by: arenac
app.kubernetes.io/part-of: arenac-harness
arenac.dev/task: {{ .Values.harness.task | quote }}
{{- end -}}
