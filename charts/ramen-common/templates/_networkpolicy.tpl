{{/*
Default-deny egress for one service, with an allow list: DNS always; the pods of this release
(the other ramen services and any dependency bundled in it) unless allowSameRelease is off;
the worker namespaces the zone-manager creates; then global.networkPolicy.egress.extraAllow
and the service's own networkPolicy.extraAllow, verbatim NetworkPolicyEgressRules.
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
        - { protocol: TCP, port: {{ . }} }
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
