{{/* The chart's name, or nameOverride. */}}
{{- define "overseer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The release's object names: fullnameOverride, else the release name when it already
holds the chart's name (release "overseer" -> "overseer"), else "<release>-<name>".
*/}}
{{- define "overseer.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "overseer.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Cluster-scoped objects (the ClusterRole and its binding) carry the release's namespace
too: two releases of the same name in two namespaces would otherwise share them.
*/}}
{{- define "overseer.clusterName" -}}
{{- printf "%s-%s" (include "overseer.fullname" .) .Release.Namespace | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The name of the RBAC objects: a Role in watchNamespace, else cluster-wide. */}}
{{- define "overseer.rbacName" -}}
{{- if .Values.watchNamespace }}{{ include "overseer.fullname" . }}{{ else }}{{ include "overseer.clusterName" . }}{{ end }}
{{- end }}

{{- define "overseer.serviceAccountName" -}}
{{- default (include "overseer.fullname" .) .Values.serviceAccount.name }}
{{- end }}

{{/* What selects the operator's pods; never changes across upgrades. */}}
{{- define "overseer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "overseer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The recommended labels, on every object of the chart. */}}
{{- define "overseer.labels" -}}
{{ include "overseer.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/component: controller
app.kubernetes.io/part-of: overseer
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The operator image: by digest when one is given, else by tag. */}}
{{- define "overseer.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}
{{- end }}

{{- define "overseer.roleKind" -}}
{{ if .Values.watchNamespace }}Role{{ else }}ClusterRole{{ end }}
{{- end }}

{{/*
The leader Lease: one per release, so two releases in one namespace never share a
leader. Release "overseer" keeps the name every release used before (the operator's
default), so its upgrade never has two leaders.
*/}}
{{- define "overseer.leaseName" -}}
{{- printf "%s-controller" (include "overseer.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
