{{/* Bounds voluntary evictions (node drains, upgrades). It does not cover scale-downs: a
ReplicaSet deletes pods directly, so the drain on SIGTERM is what protects in-flight work. */}}
{{- define "ramen.pdb" -}}
{{- if .Values.pdb.enabled -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "ramen.fullname" . }}
  labels:
    {{- include "ramen.labels" . | nindent 4 }}
spec:
  {{- if .Values.pdb.minAvailable }}
  minAvailable: {{ .Values.pdb.minAvailable }}
  {{- else }}
  maxUnavailable: {{ .Values.pdb.maxUnavailable | default 1 }}
  {{- end }}
  # A pod that is not ready (a dependency down) may still be evicted; otherwise one broken
  # pod would block every node drain.
  unhealthyPodEvictionPolicy: AlwaysAllow
  selector:
    matchLabels:
      {{- include "ramen.selectorLabels" . | nindent 6 }}
{{- end -}}
{{- end -}}
