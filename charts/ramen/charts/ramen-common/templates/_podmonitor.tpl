{{/* Prometheus Operator scrape of /metrics on the admin port (ClusterIP only by design). */}}
{{- define "ramen.podMonitor" -}}
{{- $pm := .Values.global.metrics.podMonitor -}}
{{- if $pm.enabled -}}
apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata:
  name: {{ include "ramen.fullname" . }}
  labels:
    {{- include "ramen.labels" . | nindent 4 }}
    {{- with $pm.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  selector:
    matchLabels:
      {{- include "ramen.selectorLabels" . | nindent 6 }}
  podMetricsEndpoints:
    - port: admin
      path: /metrics
      interval: {{ $pm.interval | default "30s" }}
      {{- with $pm.scrapeTimeout }}
      scrapeTimeout: {{ . }}
      {{- end }}
{{- end -}}
{{- end -}}
