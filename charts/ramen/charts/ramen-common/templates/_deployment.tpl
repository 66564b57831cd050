{{/*
The Deployment of one ramen service: `ramen serve <service>` from the shared image, liveness
on /healthz and readiness on /readyz (admin port), drain-aware grace periods, non-root with a
read-only root filesystem (the data directory and /tmp are emptyDirs).
*/}}
{{- define "ramen.deployment" -}}
{{- $keda := and .Values.keda .Values.keda.enabled -}}
{{- if eq .Chart.Name "api-gateway" }}{{ include "ramen.requireSharedState" . }}{{ end -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "ramen.fullname" . }}
  labels:
    {{- include "ramen.labels" . | nindent 4 }}
spec:
  {{- if not $keda }}
  replicas: {{ .Values.replicaCount }}
  {{- end }}
  revisionHistoryLimit: 5
  progressDeadlineSeconds: {{ include "ramen.progressDeadlineSeconds" . }}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      # Surge first: the old pod keeps serving (or draining) while the new one gets ready.
      maxSurge: 1
      maxUnavailable: 0
  selector:
    matchLabels:
      {{- include "ramen.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "ramen.labels" . | nindent 8 }}
        {{- with .Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        # Secrets rendered from values roll the pods when they change; an existingSecret
        # does not (kubectl rollout restart after changing it).
        checksum/secrets: {{ .Values.global.secrets | toJson | sha256sum }}
        {{- with .Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "ramen.serviceAccountName" . }}
      automountServiceAccountToken: {{ .Values.serviceAccount.automountToken | default false }}
      terminationGracePeriodSeconds: {{ include "ramen.terminationGracePeriodSeconds" . }}
      {{- with .Values.global.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.global.podSecurityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: {{ .Chart.Name }}
          image: {{ include "ramen.image" . | quote }}
          imagePullPolicy: {{ .Values.global.image.pullPolicy | default "IfNotPresent" }}
          args: ["serve", {{ .Chart.Name | quote }}]
          ports:
            - name: {{ include "ramen.portName" . }}
              containerPort: {{ include "ramen.port" . }}
              protocol: TCP
            - name: admin
              containerPort: {{ .Values.global.ports.admin }}
              protocol: TCP
          env:
            {{- include "ramen.env" . | nindent 12 }}
          envFrom:
            {{- include "ramen.envFrom" . | nindent 12 }}
          startupProbe:
            httpGet: { path: /healthz, port: admin }
            periodSeconds: 2
            failureThreshold: 30
          # Liveness is the listener only: a process that is draining, or whose dependency
          # is down, must not be restarted for it.
          livenessProbe:
            httpGet: { path: /healthz, port: admin }
            periodSeconds: 10
            timeoutSeconds: 3
            failureThreshold: 3
          # Readiness pings every dependency with a 1 s deadline each; 503 + JSON naming the
          # failing one (visible in kubectl describe pod). Draining fails it first.
          readinessProbe:
            httpGet: { path: /readyz, port: admin }
            periodSeconds: 5
            timeoutSeconds: 5
            failureThreshold: 2
          {{- with .Values.preStopSleepSeconds }}
          lifecycle:
            # Let endpoint removal reach every proxy before the process starts draining.
            # (exec, not the sleep action: that one needs Kubernetes 1.30+).
            preStop:
              exec:
                command: ["/bin/sleep", {{ . | quote }}]
          {{- end }}
          {{- with .Values.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- with .Values.global.securityContext }}
          securityContext:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          volumeMounts:
            - { name: data, mountPath: /var/lib/ramen }
            - { name: tmp, mountPath: /tmp }
            {{- if include "ramen.nats.authSecretName" . }}
            - { name: nats-auth, mountPath: {{ include "ramen.nats.authDir" . }}, readOnly: true }
            {{- end }}
      volumes:
        - name: data
          emptyDir: {}
        - name: tmp
          emptyDir: {}
        {{- include "ramen.nats.authVolume" . | nindent 8 }}
      {{- with .Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      topologySpreadConstraints:
        {{- if .Values.topologySpreadConstraints }}
        {{- toYaml .Values.topologySpreadConstraints | nindent 8 }}
        {{- else }}
        # Soft spread over nodes, so one node's turnover never takes every replica at once.
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels:
              {{- include "ramen.selectorLabels" . | nindent 14 }}
        {{- end }}
{{- end -}}
