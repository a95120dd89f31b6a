{{- define "overseer.labels" -}}
app.kubernetes.io/name: overseer
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
{{- define "overseer.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}
{{- define "overseer.roleKind" -}}
{{ if .Values.watchNamespace }}Role{{ else }}ClusterRole{{ end }}
{{- end }}
