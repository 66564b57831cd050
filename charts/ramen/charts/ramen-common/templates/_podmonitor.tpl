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
  # Every series scraped carries app_kubernetes_io_part_of="ramen": the alert rules pick
  # ramen's pods out of `up` and kube-state-metrics by it.
  podTargetLabels:
    - app.kubernetes.io/part-of
  podMetricsEndpoints:
    - port: admin
      path: /metrics
      interval: {{ $pm.interval | default "30s" }}
      {{- with $pm.scrapeTimeout }}
      scrapeTimeout: {{ . }}
      {{- end }}
{{- end -}}
{{- end -}}
