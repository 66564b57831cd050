{{/* The ClusterIP Service of a ramen service's API port. The admin port (/metrics) is
scraped from the pods (PodMonitor) and never put behind a Service or an Ingress. */}}
{{- define "ramen.service" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "ramen.fullname" . }}
  labels:
    {{- include "ramen.labels" . | nindent 4 }}
  {{- with .Values.service.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: {{ .Values.service.type | default "ClusterIP" }}
  selector:
    {{- include "ramen.selectorLabels" . | nindent 4 }}
  ports:
    - name: {{ include "ramen.portName" . }}
      port: {{ include "ramen.port" . }}
      targetPort: {{ include "ramen.portName" . }}
      protocol: TCP
      appProtocol: {{ if eq .Chart.Name "api-gateway" }}http{{ else }}grpc{{ end }}
{{- end -}}
