{{/*
Names and labels. Every template here takes the context of the chart that calls it: a
service subchart (its .Chart.Name is the service) or the umbrella. Shared settings are read
from .Values.global, the only values Helm hands to every subchart.
*/}}

{{/* A service's object name: <release>-<service>. No "release contains chart name"
shortcut: the gRPC endpoints every service is given (RAMEN_ENDPOINTS__*) are derived from
this exact shape, so it must not vary with the release name. */}}
{{- define "ramen.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The name of a cluster-scoped object of a service (ClusterRole, admission policy):
<namespace>-<release>-<service>, so releases of one name in two namespaces never collide
(not truncated: these names may be 253 characters long). */}}
{{- define "ramen.clusterScopedName" -}}
{{- printf "%s-%s-%s" .Release.Namespace .Release.Name .Chart.Name -}}
{{- end -}}

{{/* The in-cluster host of another service: (dict "ctx" . "service" "auth"). */}}
{{- define "ramen.serviceHost" -}}
{{- printf "%s-%s" .ctx.Release.Name .service | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ramen.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ramen.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ramen.labels" -}}
{{ include "ramen.selectorLabels" . }}
app.kubernetes.io/component: {{ .Chart.Name }}
app.kubernetes.io/part-of: ramen
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ include "ramen.chart" . }}
{{- end -}}

{{- define "ramen.image" -}}
{{- $image := .Values.global.image -}}
{{- printf "%s:%s" $image.repository ($image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{- define "ramen.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "ramen.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* The listening port of this service (global.ports is keyed by service name). */}}
{{- define "ramen.port" -}}
{{- $port := index .Values.global.ports .Chart.Name -}}
{{- if not $port -}}
{{- fail (printf "global.ports has no port for service %q" .Chart.Name) -}}
{{- end -}}
{{- int $port -}}
{{- end -}}

{{/* The api-gateway speaks HTTP; the other services gRPC. */}}
{{- define "ramen.portName" -}}
{{- if eq .Chart.Name "api-gateway" }}http{{ else }}grpc{{ end -}}
{{- end -}}

{{/* The auth bundle Secret: the operator's existing one, or the chart-generated one. */}}
{{- define "ramen.authSecretName" -}}
{{- .Values.global.secrets.auth.existingSecret | default (printf "%s-auth-bundle" .Release.Name) -}}
{{- end -}}

{{/* The backends Secret (credential-bearing URIs, S3 keys), or "" when there is none. */}}
{{- define "ramen.backendsSecretName" -}}
{{- $b := .Values.global.secrets.backends -}}
{{- if $b.existingSecret -}}
{{- $b.existingSecret -}}
{{- else if or $b.mongoUri $b.redisUrl $b.redisPassword $b.redisSentinelPassword $b.s3AccessKeyId $b.s3SecretAccessKey -}}
{{- printf "%s-backends" .Release.Name -}}
{{- end -}}
{{- end -}}

{{/*
The Secret holding the single sign-on client secret, or "" when there is none (a public
client): the operator's existing one, or <release>-sso rendered from the value.
*/}}
{{- define "ramen.ssoSecretName" -}}
{{- $s := .Values.global.secrets.sso | default dict -}}
{{- if $s.existingSecret -}}
{{- $s.existingSecret -}}
{{- else if $s.clientSecret -}}
{{- printf "%s-sso" .Release.Name -}}
{{- end -}}
{{- end -}}

{{/* The key of the client secret in that Secret. */}}
{{- define "ramen.ssoSecretKey" -}}
{{- $s := .Values.global.secrets.sso | default dict -}}
{{- if $s.existingSecret -}}
{{- $s.existingSecretKey | default "client-secret" -}}
{{- else -}}
client-secret
{{- end -}}
{{- end -}}
