{{/* The JetStream client URL (required in cloud mode; may use template syntax, e.g. the release name). */}}
{{- define "ramen.nats.url" -}}
{{- $url := required "global.config.nats.url is required: the JetStream client URL (nats://host:4222); values-dev.yaml points it at the bundled NATS" .Values.global.config.nats.url -}}
{{- $url = tpl $url . -}}
{{- if not (regexMatch "^(nats|tls)://[^/\\s,]+(,(nats|tls)://[^/\\s,]+)*$" $url) -}}
{{- fail (printf "global.config.nats.url is %q: it must be the JetStream client URL, nats://[user:pass@]host:4222 (tls:// for TLS; comma-separated for a cluster)" $url) -}}
{{- end -}}
{{- $url -}}
{{- end -}}

{{/*
The NATS monitoring endpoint (host:port serving /jsz) for KEDA's JetStream scaler, which
scrapes the monitoring port, not the client URL:
  1. global.config.nats.monitoringEndpoint when set, else
  2. <release>-nats:8222 when the client URL points at the bundled NATS (<release>-nats), else
  3. the render fails, naming the value to set.
*/}}
{{- define "ramen.nats.monitoringEndpoint" -}}
{{- $n := .Values.global.config.nats -}}
{{- $bundled := printf "%s-nats" .Release.Name -}}
{{- $host := regexReplaceAll "^[a-z]+://([^@/]*@)?([^:/,]+).*$" (include "ramen.nats.url" .) "${2}" -}}
{{- if $n.monitoringEndpoint -}}
{{- $endpoint := tpl $n.monitoringEndpoint . -}}
{{- if not (regexMatch "^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?:[0-9]{1,5}$" $endpoint) -}}
{{- fail (printf "global.config.nats.monitoringEndpoint is %q: it must be host:port of the NATS monitoring listener (e.g. nats.shared:8222), without a scheme or path" $endpoint) -}}
{{- end -}}
{{- $endpoint -}}
{{- else if or (eq $host $bundled) (hasPrefix (printf "%s." $bundled) $host) -}}
{{- printf "%s:8222" $bundled -}}
{{- else -}}
{{- fail (printf "global.config.nats.monitoringEndpoint is required for KEDA with an external NATS (global.config.nats.url points at %s, not the bundled %s): host:port of its monitoring listener (e.g. nats.shared:8222), which serves /jsz" $host $bundled) -}}
{{- end -}}
{{- end -}}

{{/*
The Secret of the services' NATS users (`<service>.creds`, and `node-signing.nk` for the
zone-manager): global.secrets.nats.existingSecret, else <release>-nats-auth when
global.secrets.nats.credentials is set, else "" (no credentials are mounted).
*/}}
{{- define "ramen.nats.authSecretName" -}}
{{- $n := .Values.global.secrets.nats | default dict -}}
{{- if $n.existingSecret -}}
{{- $n.existingSecret -}}
{{- else if $n.credentials -}}
{{- printf "%s-nats-auth" .Release.Name -}}
{{- end -}}
{{- end -}}

{{/* Where a service's NATS credentials are mounted. */}}
{{- define "ramen.nats.authDir" -}}/etc/ramen/nats{{- end -}}

{{/* The NATS-auth volume of a service's pod: its own `.creds` only (the zone-manager's also the node signing key). */}}
{{- define "ramen.nats.authVolume" -}}
{{- with include "ramen.nats.authSecretName" . }}
- name: nats-auth
  secret:
    secretName: {{ . }}
    defaultMode: 0440
    items:
      - { key: {{ printf "%s.creds" $.Chart.Name | quote }}, path: {{ printf "%s.creds" $.Chart.Name | quote }} }
      {{- if eq $.Chart.Name "zone-manager" }}
      - { key: node-signing.nk, path: node-signing.nk }
      {{- end }}
{{- end }}
{{- end -}}
