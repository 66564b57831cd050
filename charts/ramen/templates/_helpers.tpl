{{/*
The helpers this chart and its service subcharts share live in the ramen-common library
chart (charts/ramen-common here, vendored like the services: a dependency without a
repository): names and labels, the RAMEN_* environment, the drain/grace invariants, the
NATS monitoring endpoint, the shared-state and value checks, and the workload
templates each subchart renders (ramen.deployment, ramen.service, ramen.pdb,
ramen.serviceAccount, ramen.networkPolicy, ramen.podMonitor). Helm's template namespace is
global across a chart and its subcharts, so subcharts call them directly.

Why shared settings are under global.*: Helm gives a subchart only its own values and
global, so global.config / global.secrets / global.networkPolicy / global.metrics are the
runbook's config / secrets / networkPolicy / metrics, reachable from every service.

Below: helpers only this umbrella uses.
*/}}

{{/* A value for a generated Secret key: the one given in values (checked by the caller), the
one already in the cluster (so upgrades keep it), or a fresh random one. Returns base64 data.
(dict "given" <plain> "existing" <base64 or nil> "fresh" <plain>) */}}
{{- define "ramen.secretData" -}}
{{- if .given -}}
{{- b64enc .given -}}
{{- else if .existing -}}
{{- .existing -}}
{{- else -}}
{{- b64enc .fresh -}}
{{- end -}}
{{- end -}}

{{/* The development stack (dev-*.yaml, devStack.* in values): object name, labels and
selector of one of its stores. (dict "ctx" $ "name" "mongo") */}}
{{- define "ramen.dev.name" -}}
{{- printf "%s-%s" .ctx.Release.Name .name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ramen.dev.selectorLabels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- end -}}

{{- define "ramen.dev.labels" -}}
{{ include "ramen.dev.selectorLabels" . }}
app.kubernetes.io/component: dev-{{ .name }}
app.kubernetes.io/part-of: ramen
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
helm.sh/chart: {{ include "ramen.chart" .ctx }}
{{- end -}}

{{/* Pod and container security for the development stores: the official images all run
as a non-root user of their own when started as that user (uid in devStack.<store>). */}}
{{- define "ramen.dev.podSecurity" -}}
runAsNonRoot: true
runAsUser: {{ .uid }}
runAsGroup: {{ .gid }}
fsGroup: {{ .gid }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "ramen.dev.containerSecurity" -}}
allowPrivilegeEscalation: false
capabilities:
  drop: [ALL]
{{- end -}}

{{/* The SeaweedFS bucket creation: the same script as docker-compose.yml's s3-init (the
chart check holds them equal). weed shell reads commands on stdin and always exits 0, so
the bucket is looked up again afterwards; exit 1 lets the Job retry. */}}
{{- define "ramen.dev.s3BucketScript" -}}
listed() { echo s3.bucket.list | weed shell -master="$WEED_MASTER" -filer="$WEED_FILER" | awk -v b="$RAMEN_S3_BUCKET" '$1 == b { found = 1 } END { exit !found }'; }
listed || echo "s3.bucket.create -name $RAMEN_S3_BUCKET" | weed shell -master="$WEED_MASTER" -filer="$WEED_FILER"
listed || { echo "bucket $RAMEN_S3_BUCKET is still missing" >&2; exit 1; }
{{- end -}}
