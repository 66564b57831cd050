{{/*
Drain and the grace-period invariants (docs/operator-guide.md § Pod turnover).

On SIGTERM a ramen process fails readiness, then drains: `complete` lets the work it holds
finish up to the drain timeout, `interrupt` cancels or hands it back at once. Kubernetes
SIGKILLs the pod terminationGracePeriodSeconds after SIGTERM (after the preStop hook starts),
so:
  terminationGracePeriodSeconds >= preStopSleepSeconds + drain timeout + margin
  progressDeadlineSeconds        >  terminationGracePeriodSeconds
Left at 0, both are derived from the drain timeout; set by hand, a value that breaks the
invariant fails the render instead of silently cutting a drain short.
*/}}

{{- define "ramen.drainMode" -}}
{{- $mode := .Values.drain.mode | default .Values.global.config.drain.mode | default "complete" -}}
{{- if not (has $mode (list "complete" "interrupt")) -}}
{{- fail (printf "%s: drain mode %q must be complete or interrupt" .Chart.Name $mode) -}}
{{- end -}}
{{- $mode -}}
{{- end -}}

{{- define "ramen.drainTimeoutSeconds" -}}
{{- int (.Values.drain.timeoutSeconds | default .Values.global.config.drain.timeoutSeconds | default 30) -}}
{{- end -}}

{{- define "ramen.terminationGracePeriodSeconds" -}}
{{- $timeout := include "ramen.drainTimeoutSeconds" . | int -}}
{{- $margin := .Values.global.config.drain.marginSeconds | default 30 | int -}}
{{- $sleep := .Values.preStopSleepSeconds | default 0 | int -}}
{{- $floor := add $sleep $timeout $margin -}}
{{- $set := .Values.terminationGracePeriodSeconds | default 0 | int -}}
{{- if eq $set 0 -}}
{{- $floor -}}
{{- else if lt $set (int $floor) -}}
{{- fail (printf "%s.terminationGracePeriodSeconds=%d is below preStopSleepSeconds (%d) + drain timeout (%d) + margin (%d) = %d: Kubernetes would SIGKILL the pod while it drains" .Chart.Name $set $sleep $timeout $margin (int $floor)) -}}
{{- else -}}
{{- $set -}}
{{- end -}}
{{- end -}}

{{- define "ramen.progressDeadlineSeconds" -}}
{{- $grace := include "ramen.terminationGracePeriodSeconds" . | int -}}
{{- $set := .Values.progressDeadlineSeconds | default 0 | int -}}
{{- if eq $set 0 -}}
{{- max 600 (add $grace 60) -}}
{{- else if le $set $grace -}}
{{- fail (printf "%s.progressDeadlineSeconds=%d must be above terminationGracePeriodSeconds (%d): a rollout waiting on a draining pod would be marked failed while the new pods already serve" .Chart.Name $set $grace) -}}
{{- else -}}
{{- $set -}}
{{- end -}}
{{- end -}}
