{{/*
The RAMEN_* environment of a service, from global.config (shared) and the subchart's own
values. Key names follow libs/config: flat aliases (RAMEN_NATS_URL, RAMEN_MONGO_DB, ...) where
the runbook names them, `__` nesting for the rest (RAMEN_LISTEN__API, RAMEN_DRAIN__MODE).
A knob left empty is not rendered, so the binary's default (libs/config/src/model.rs) applies.
Numbers go through int64 so large ones never render in exponent form.
*/}}
{{- define "ramen.env" -}}
{{- $c := .Values.global.config -}}
{{- $ports := .Values.global.ports -}}
{{- $env := dict -}}
{{- $_ := set $env "RAMEN_MODE" "cloud" -}}
{{- $_ := set $env "RAMEN_LOG_FORMAT" ($c.logFormat | default "json") -}}
{{- $_ := set $env "RAMEN_LOG_LEVEL" ($c.logLevel | default "info") -}}
{{- $_ := set $env "RAMEN_DATA_DIR" "/var/lib/ramen" -}}
{{- /* Every pod binds its own service's port on all interfaces; the others stay unused. */ -}}
{{- range $key, $svc := dict "API" "api-gateway" "AUTH" "auth" "DEPLOYER" "deployer" "ZONE_MANAGER" "zone-manager" "REBALANCER" "rebalancer" "ADMIN" "admin" -}}
{{- $_ := set $env (printf "RAMEN_LISTEN__%s" $key) (printf "0.0.0.0:%d" (int (index $ports $svc))) -}}
{{- end -}}
{{- range $key, $svc := dict "AUTH" "auth" "DEPLOYER" "deployer" "ZONE_MANAGER" "zone-manager" "REBALANCER" "rebalancer" -}}
{{- $host := include "ramen.serviceHost" (dict "ctx" $ "service" $svc) -}}
{{- $_ := set $env (printf "RAMEN_ENDPOINTS__%s" $key) (printf "http://%s:%d" $host (int (index $ports $svc))) -}}
{{- end -}}
{{- $_ := set $env "RAMEN_NATS_URL" (include "ramen.nats.url" .) -}}
{{- if include "ramen.nats.authSecretName" . -}}
{{- $_ := set $env "RAMEN_NATS_CREDS" (printf "%s/%s.creds" (include "ramen.nats.authDir" .) .Chart.Name) -}}
{{- if eq .Chart.Name "zone-manager" -}}
{{- $_ := set $env "RAMEN_NATS_SIGNING_KEY" (printf "%s/node-signing.nk" (include "ramen.nats.authDir" .)) -}}
{{- end -}}
{{- end -}}
{{- $n := $c.nats -}}
{{- range $key, $var := dict "stream" "RAMEN_NATS_STREAM" "kvBucket" "RAMEN_NATS_KV_BUCKET" "dlqStream" "RAMEN_NATS_DLQ_STREAM" "eventsStream" "RAMEN_NATS__EVENTS_STREAM" "ackWait" "RAMEN_NATS_ACK_WAIT" "maxAge" "RAMEN_NATS_MAX_AGE" "dlqMaxAge" "RAMEN_NATS_DLQ_MAX_AGE" -}}
{{- with index $n $key }}{{ $_ := set $env $var (toString .) }}{{ end -}}
{{- end -}}
{{- range $key, $var := dict "maxAckPending" "RAMEN_NATS_MAX_ACK_PENDING" "maxDeliver" "RAMEN_NATS_MAX_DELIVER" "maxPayload" "RAMEN_NATS_MAX_PAYLOAD" -}}
{{- with index $n $key }}{{ $_ := set $env $var (printf "%d" (int64 .)) }}{{ end -}}
{{- end -}}
{{- with $c.mongo.uri }}{{ $_ := set $env "RAMEN_MONGO_URI" (tpl . $) }}{{ end -}}
{{- with $c.mongo.db }}{{ $_ := set $env "RAMEN_MONGO_DB" . }}{{ end -}}
{{- with $c.s3.bucket }}{{ $_ := set $env "RAMEN_S3_BUCKET" (tpl . $) }}{{ end -}}
{{- with $c.s3.endpoint }}{{ $_ := set $env "RAMEN_S3_ENDPOINT" (tpl . $) }}{{ end -}}
{{- with $c.s3.region }}{{ $_ := set $env "RAMEN_S3_REGION" . }}{{ end -}}
{{- if kindIs "bool" $c.s3.forcePathStyle }}{{ $_ := set $env "RAMEN_S3__FORCE_PATH_STYLE" (toString $c.s3.forcePathStyle) }}{{ end -}}
{{- with $c.redis.url }}{{ $_ := set $env "RAMEN_REDIS_URL" (tpl . $) }}{{ end -}}
{{- with $c.redis.sentinelAddrs }}{{ $_ := set $env "RAMEN_REDIS_SENTINEL_ADDRS" (tpl . $) }}{{ end -}}
{{- with $c.redis.masterName }}{{ $_ := set $env "RAMEN_REDIS_MASTER_NAME" . }}{{ end -}}
{{- if and $c.redis.sentinelAddrs (not $c.redis.masterName) -}}
{{- fail "global.config.redis.masterName is required with global.config.redis.sentinelAddrs: the name of the master the Sentinels monitor" -}}
{{- end -}}
{{- with $c.redis.timeout }}{{ $_ := set $env "RAMEN_REDIS__TIMEOUT" (toString .) }}{{ end -}}
{{- with $c.mcpAuth -}}
{{- range $key, $var := dict "publicUrl" "RAMEN_MCP_AUTH__PUBLIC_URL" "defaultMode" "RAMEN_MCP_AUTH__DEFAULT_MODE" "issuers" "RAMEN_MCP_AUTH__ISSUERS" "scopes" "RAMEN_MCP_AUTH__SCOPES" -}}
{{- with index $.Values.global.config.mcpAuth $key }}{{ $_ := set $env $var (tpl (toString .) $) }}{{ end -}}
{{- end -}}
{{- end -}}
{{- with $c.sso -}}
{{- range $key, $var := dict "issuer" "RAMEN_SSO__ISSUER" "clientId" "RAMEN_SSO__CLIENT_ID" "publicUrl" "RAMEN_SSO__PUBLIC_URL" "scopes" "RAMEN_SSO__SCOPES" "displayName" "RAMEN_SSO__DISPLAY_NAME" "groupsClaim" "RAMEN_SSO__GROUPS_CLAIM" "superAdminGroups" "RAMEN_SSO__SUPER_ADMIN_GROUPS" "memberships" "RAMEN_SSO__MEMBERSHIPS" -}}
{{- with index $.Values.global.config.sso $key }}{{ $_ := set $env $var (tpl (toString .) $) }}{{ end -}}
{{- end -}}
{{- range $key, $var := dict "trustEmail" "RAMEN_SSO__TRUST_EMAIL" "passwordSignIn" "RAMEN_SSO__PASSWORD_SIGN_IN" -}}
{{- $v := index $.Values.global.config.sso $key -}}
{{- if kindIs "bool" $v }}{{ $_ := set $env $var (toString $v) }}{{ end -}}
{{- end -}}
{{- /* What every process would refuse at start (cloud mode), refused here naming the value. */ -}}
{{- if and (kindIs "bool" .passwordSignIn) (not .passwordSignIn) (not .issuer) -}}
{{- fail "global.config.sso.passwordSignIn=false needs global.config.sso.issuer: without single sign-on no one could sign in" -}}
{{- end -}}
{{- if and .issuer (not .clientId) -}}
{{- fail "global.config.sso.clientId is required with global.config.sso.issuer: ramen's client id at the identity provider" -}}
{{- end -}}
{{- if and .issuer (not .publicUrl) -}}
{{- fail "global.config.sso.publicUrl is required with global.config.sso.issuer: the URL people reach ramen at (the provider sends them back to <publicUrl>/api/auth/sso/callback)" -}}
{{- end -}}
{{- end -}}
{{- $_ := set $env "RAMEN_DRAIN__MODE" (include "ramen.drainMode" .) -}}
{{- $_ := set $env "RAMEN_DRAIN__TIMEOUT" (printf "%ss" (include "ramen.drainTimeoutSeconds" .)) -}}
{{- $_ := set $env "OTEL_SERVICE_NAME" (printf "ramen-%s" .Chart.Name) -}}
{{- range $k, $v := $c.extraEnv }}{{ $_ := set $env $k (toString $v) }}{{ end -}}
{{- range $k, $v := .Values.extraEnv }}{{ $_ := set $env $k (toString $v) }}{{ end -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- range $k, $v := $env }}
- name: {{ $k }}
  value: {{ $v | quote }}
{{- end }}
{{- /* Only auth redeems codes at the provider, so only auth holds the client secret. */ -}}
{{- if eq .Chart.Name "auth" }}
{{- with include "ramen.ssoSecretName" . }}
- name: RAMEN_SSO__CLIENT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ include "ramen.ssoSecretKey" $ }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Secrets as whole env files: their keys are the variable names (RAMEN_JWT_SECRET, ...). */}}
{{- define "ramen.envFrom" -}}
- secretRef:
    name: {{ include "ramen.authSecretName" . }}
{{- with include "ramen.backendsSecretName" . }}
- secretRef:
    name: {{ . }}
{{- end }}
{{- end -}}

{{/*
Whether shared replica state (Valkey/Redis) is configured: a URL or Sentinels in
global.config.redis, a URL in global.secrets.backends, or an existing backends Secret (which
the chart cannot read, so it is trusted to carry RAMEN_REDIS_URL). "true" or "".
*/}}
{{- define "ramen.redis.configured" -}}
{{- $r := .Values.global.config.redis -}}
{{- $b := .Values.global.secrets.backends -}}
{{- if or $r.url $r.sentinelAddrs $b.redisUrl $b.existingSecret }}true{{ end -}}
{{- end -}}

{{/*
More than one api-gateway replica needs shared state: with in-memory state a rate limit is
counted per pod and an OAuth callback can land on a pod that never saw the paired request.
*/}}
{{- define "ramen.requireSharedState" -}}
{{- $replicas := int .Values.replicaCount -}}
{{- if and (gt $replicas 1) (not (include "ramen.redis.configured" .)) -}}
{{- fail (printf "%s.replicaCount=%d needs shared replica state: set global.config.redis.url (or global.config.redis.sentinelAddrs + masterName, or global.secrets.backends.redisUrl), or run one replica" .Chart.Name $replicas) -}}
{{- end -}}
{{- end -}}
