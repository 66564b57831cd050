{{- define "ramen.serviceAccount" -}}
{{- if .Values.serviceAccount.create -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "ramen.serviceAccountName" . }}
  labels:
    {{- include "ramen.labels" . | nindent 4 }}
  {{- with .Values.serviceAccount.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
# Only services that call the Kubernetes API (zone-manager) mount a token.
automountServiceAccountToken: {{ .Values.serviceAccount.automountToken | default false }}
{{- end -}}
{{- end -}}
