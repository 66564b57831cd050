{{/*
Default-deny egress for one service, with an allow list (docs/operator-guide.md § NetworkPolicy
egress), in this order:
  1. DNS, always;
  2. the backing services, one rule each (global.networkPolicy.egress.dependencies: MongoDB,
     NATS, S3, Valkey): TCP to their ports, to their `to` peers (empty = any address);
  3. the pods of this release (the other ramen services and any dependency bundled in it),
     unless allowSameRelease is off;
  4. the worker namespaces the zone-manager creates;
  5. global.networkPolicy.egress.extraAllow, then the service's own networkPolicy.extraAllow,
     verbatim NetworkPolicyEgressRules.
Ingress is not restricted here.
*/}}
{{- define "ramen.networkPolicy" -}}
{{- $np := .Values.global.networkPolicy -}}
{{- if $np.enabled -}}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "ramen.fullname" . }}
  labels:
    {{- include "ramen.labels" . | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "ramen.selectorLabels" . | nindent 6 }}
  policyTypes: [Egress]
  egress:
    # DNS, wherever the cluster resolver runs (kube-dns, NodeLocal DNSCache).
    - ports:
        - { protocol: UDP, port: 53 }
        - { protocol: TCP, port: 53 }
    {{- range $name := list "mongo" "nats" "s3" "valkey" }}
    {{- $dep := index ($np.egress.dependencies | default dict) $name | default dict }}
    {{- if $dep.enabled }}
    {{- $key := printf "global.networkPolicy.egress.dependencies.%s" $name }}
    {{- if not $dep.ports }}
    {{- fail (printf "%s.ports is empty: list the TCP ports of the %s servers, or set %s.enabled=false" $key $name $key) }}
    {{- end }}
    # {{ $name }} ({{ $key }})
    - ports:
        {{- range $dep.ports }}
        {{- if or (lt (int .) 1) (gt (int .) 65535) }}
        {{- fail (printf "%s.ports has %v: ports are numbers from 1 to 65535" $key .) }}
        {{- end }}
        - { protocol: TCP, port: {{ int . }} }
        {{- end }}
      {{- with $dep.to }}
      to:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- end }}
    {{- end }}
    {{- if $np.egress.allowSameRelease }}
    # The other ramen services and any dependency bundled in this release.
    - to:
        - podSelector:
            matchLabels:
              app.kubernetes.io/instance: {{ .Release.Name }}
    {{- end }}
    {{- with $np.egress.workers }}
    {{- if .enabled }}
    # Worker nodes in the zone namespaces (MCP 8000, RunnerService admin gRPC 7105).
    - to:
        - namespaceSelector:
            {{- toYaml .namespaceSelector | nindent 12 }}
      ports:
        {{- range .ports }}
        - { protocol: TCP, port: {{ int . }} }
        {{- end }}
    {{- end }}
    {{- end }}
    {{- with $np.egress.extraAllow }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
    {{- with .Values.networkPolicy.extraAllow }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}
{{- end -}}
