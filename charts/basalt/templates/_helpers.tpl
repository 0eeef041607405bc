{{/* vim: set filetype=mustache: */}}

{{/* Chart name. */}}
{{- define "basalt.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name (release-based, at most 63 characters). */}}
{{- define "basalt.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Name of the controller's objects. */}}
{{- define "basalt.controllerName" -}}
{{- printf "%s-controller" (include "basalt.fullname" . | trunc 52 | trimSuffix "-") }}
{{- end }}

{{/* Name of the cluster-scoped RBAC objects: unique per release namespace. */}}
{{- define "basalt.clusterRbacName" -}}
{{- printf "%s-%s" .Release.Namespace (include "basalt.controllerName" .) }}
{{- end }}

{{- define "basalt.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Common labels. */}}
{{- define "basalt.labels" -}}
helm.sh/chart: {{ include "basalt.chart" . }}
{{ include "basalt.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: basalt
{{- end }}

{{/* Selector labels (add app.kubernetes.io/component per workload). */}}
{{- define "basalt.selectorLabels" -}}
app.kubernetes.io/name: {{ include "basalt.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "basalt.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* Service accounts. */}}
{{- define "basalt.engineServiceAccount" -}}
{{- include "basalt.fullname" . }}
{{- end }}

{{- define "basalt.controllerServiceAccount" -}}
{{- include "basalt.controllerName" . }}
{{- end }}

{{/* "true" when the controller runs inside the engine pods. */}}
{{- define "basalt.embedded" -}}
{{- if and .Values.controller.enabled .Values.controller.embedded }}true{{ end }}
{{- end }}

{{/* "true" when the controller runs as its own Deployment. */}}
{{- define "basalt.separateController" -}}
{{- if and .Values.controller.enabled (not .Values.controller.embedded) }}true{{ end }}
{{- end }}

{{/* The service account the controller runs as. */}}
{{- define "basalt.rbacSubject" -}}
{{- if include "basalt.embedded" . }}
{{- include "basalt.engineServiceAccount" . }}
{{- else }}
{{- include "basalt.controllerServiceAccount" . }}
{{- end }}
{{- end }}

{{/* Watched namespaces as a JSON list (default: the release namespace). */}}
{{- define "basalt.watchNamespaces" -}}
{{- $ns := list }}
{{- range .Values.controller.watchNamespaces }}
{{- $ns = append $ns (trim .) }}
{{- end }}
{{- $ns = without $ns "" | uniq }}
{{- if not $ns }}
{{- $ns = list .Release.Namespace }}
{{- end }}
{{- toJson $ns }}
{{- end }}

{{/* Plurals of the basalt.dev CRDs shipped in crds/, as a JSON list. */}}
{{- define "basalt.crdPlurals" -}}
{{- $plurals := list }}
{{- range $path, $_ := .Files.Glob "crds/*.yaml" }}
{{- $crd := fromYaml ($.Files.Get $path) }}
{{- if eq $crd.spec.group "basalt.dev" }}
{{- $plurals = append $plurals $crd.spec.names.plural }}
{{- end }}
{{- end }}
{{- if not $plurals }}
{{- fail "charts/basalt/crds/ holds no basalt.dev CRDs (copy them from crds/)" }}
{{- end }}
{{- toJson (sortAlpha $plurals) }}
{{- end }}

{{/* Secrets: where each value comes from. */}}
{{- define "basalt.secretName" -}}
{{- include "basalt.fullname" . }}
{{- end }}

{{- define "basalt.databaseSecretName" -}}
{{- .Values.database.existingSecret | default (include "basalt.secretName" .) }}
{{- end }}

{{- define "basalt.adminSecretName" -}}
{{- .Values.adminSecret.existingSecret | default (include "basalt.secretName" .) }}
{{- end }}

{{- define "basalt.jwtSecretName" -}}
{{- .Values.auth.existingSecret | default (include "basalt.secretName" .) }}
{{- end }}

{{- define "basalt.hasAdminSecret" -}}
{{- if or .Values.adminSecret.existingSecret .Values.adminSecret.value }}true{{ end }}
{{- end }}

{{- define "basalt.hasJwtSecret" -}}
{{- if or .Values.auth.existingSecret .Values.auth.jwtSecret }}true{{ end }}
{{- end }}

{{/* Key of the controller's direct database URL in the database Secret. */}}
{{- define "basalt.controllerDatabaseUrlKey" -}}
{{- .Values.controller.databaseUrlKey | default "controllerDatabaseUrl" }}
{{- end }}

{{- define "basalt.hasControllerDatabaseUrl" -}}
{{- if or .Values.controller.databaseUrlKey .Values.controller.databaseUrl }}true{{ end }}
{{- end }}

{{/* The chart Secret's data (YAML map, base64 values); empty when every value comes from an
     existing Secret. */}}
{{- define "basalt.secretData" -}}
{{- $data := dict }}
{{- if not .Values.database.existingSecret }}
{{- if .Values.database.url }}
{{- $_ := set $data .Values.database.urlKey (.Values.database.url | b64enc) }}
{{- end }}
{{- if .Values.controller.databaseUrl }}
{{- $_ := set $data (include "basalt.controllerDatabaseUrlKey" .) (.Values.controller.databaseUrl | b64enc) }}
{{- end }}
{{- end }}
{{- if and (not .Values.adminSecret.existingSecret) .Values.adminSecret.value }}
{{- $_ := set $data .Values.adminSecret.key (.Values.adminSecret.value | b64enc) }}
{{- end }}
{{- if and (not .Values.auth.existingSecret) .Values.auth.jwtSecret }}
{{- $_ := set $data .Values.auth.jwtSecretKey (.Values.auth.jwtSecret | b64enc) }}
{{- end }}
{{- if $data }}
{{- toYaml $data }}
{{- end }}
{{- end }}

{{/* Refuses values that cannot work. */}}
{{- define "basalt.validate" -}}
{{- if not (or .Values.database.url .Values.database.existingSecret) }}
{{- fail "set database.url or database.existingSecret: Basalt needs a Postgres database (BASALT_DATABASE_URL)" }}
{{- end }}
{{- if and .Values.database.existingSecret .Values.controller.databaseUrl }}
{{- fail "controller.databaseUrl cannot be stored when database.existingSecret is set: put the URL into that Secret and set controller.databaseUrlKey" }}
{{- end }}
{{- if and .Values.controller.databaseUrlKey (not .Values.database.existingSecret) (not .Values.controller.databaseUrl) }}
{{- fail "controller.databaseUrlKey names a key of the chart's Secret: set controller.databaseUrl too (or use database.existingSecret)" }}
{{- end }}
{{- if and .Values.controller.watchAllNamespaces .Values.controller.watchNamespaces }}
{{- fail "set either controller.watchNamespaces or controller.watchAllNamespaces, not both" }}
{{- end }}
{{- end }}

{{/* Environment variables shared by every Basalt container: the database URL. */}}
{{- define "basalt.databaseEnv" -}}
- name: BASALT_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "basalt.databaseSecretName" . }}
      key: {{ .Values.database.urlKey }}
{{- end }}

{{/* Controller settings (the `basalt controller` Deployment, or the engine when embedded). */}}
{{- define "basalt.controllerEnv" -}}
{{- if include "basalt.hasControllerDatabaseUrl" . }}
- name: BASALT_CONTROLLER_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "basalt.databaseSecretName" . }}
      key: {{ include "basalt.controllerDatabaseUrlKey" . }}
{{- end }}
{{- if .Values.controller.watchAllNamespaces }}
- name: BASALT_WATCH_ALL_NAMESPACES
  value: "true"
{{- else }}
- name: BASALT_WATCH_ALL_NAMESPACES
  value: "false"
- name: BASALT_WATCH_NAMESPACES
  value: {{ include "basalt.watchNamespaces" . | fromJsonArray | join "," | quote }}
{{- end }}
{{- if .Values.controller.labelSelector }}
- name: BASALT_CONTROLLER_LABEL_SELECTOR
  value: {{ .Values.controller.labelSelector | quote }}
{{- end }}
- name: BASALT_SELF_HEAL
  value: {{ .Values.controller.selfHeal | toString | quote }}
- name: BASALT_RESYNC_SECONDS
  value: {{ .Values.controller.resyncSeconds | int64 | toString | quote }}
- name: BASALT_CONTROLLER_CONCURRENCY
  value: {{ .Values.controller.concurrency | int64 | toString | quote }}
- name: BASALT_LEADER_RETRY_MS
  value: {{ .Values.controller.leaderRetryMs | int64 | toString | quote }}
- name: BASALT_CONTROLLER_PROBE_PORT
  value: "8081"
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_UID
  valueFrom:
    fieldRef:
      fieldPath: metadata.uid
- name: BASALT_PRUNE_ORPHANS
  value: {{ .Values.controller.pruneOrphans | toString | quote }}
{{- end }}

{{/* Pod annotations that roll the pods when the chart's Secret changes. */}}
{{- define "basalt.secretChecksum" -}}
checksum/secret: {{ include "basalt.secretData" . | sha256sum }}
{{- end }}

{{/* The controller's RBAC rules; the dot is the list of basalt.dev plurals. */}}
{{- define "basalt.rbacRules" -}}
{{- $plurals := . }}
# The basalt.dev resources: watch them, add and remove the finalizer, write their status.
- apiGroups:
    - basalt.dev
  resources:
    {{- range $plurals }}
    - {{ . }}
    {{- end }}
  verbs:
    - get
    - list
    - watch
    - patch
    - update
- apiGroups:
    - basalt.dev
  resources:
    {{- range $plurals }}
    - {{ . }}/status
    {{- end }}
  verbs:
    - get
    - patch
    - update
- apiGroups:
    - basalt.dev
  resources:
    {{- range $plurals }}
    - {{ . }}/finalizers
    {{- end }}
  verbs:
    - update
# Events about the resources (events.k8s.io/v1).
- apiGroups:
    - events.k8s.io
  resources:
    - events
  verbs:
    - create
    - patch
{{- end }}

{{/* OpenTelemetry export settings, when tracing.otlpEndpoint is set. */}}
{{- define "basalt.tracingEnv" -}}
{{- if .Values.tracing.otlpEndpoint }}
- name: BASALT_OTLP_ENDPOINT
  value: {{ .Values.tracing.otlpEndpoint | quote }}
- name: BASALT_OTLP_PROTOCOL
  value: {{ .Values.tracing.protocol | quote }}
{{- end }}
{{- end }}

{{/*
Change detection of live queries: the engine's setting, which the controller's metadata writes
also follow when they keep the change triggers in step.
*/}}
{{- define "basalt.changeDetectionEnv" -}}
- name: BASALT_LIVE_QUERIES_CHANGE_DETECTION
  value: {{ .Values.engine.liveQueries.changeDetection | quote }}
- name: BASALT_LIVE_QUERIES_CHANGE_DETECTION_EXCLUDE
  value: {{ join "," .Values.engine.liveQueries.changeDetectionExclude | quote }}
{{- end }}
