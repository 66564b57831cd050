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
