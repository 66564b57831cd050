{{/*
Drain and the grace-period invariants (docs/operator-guide.md § Pod turnover).

On SIGTERM a ramen process fails readiness, then drains: `complete` lets the work it holds
finish up to the drain timeout, `interrupt` cancels or hands it back at once. Kubernetes
SIGKILLs the pod terminationGracePeriodSeconds after SIGTERM (after the preStop hook starts),
so:
  terminationGracePeriodSeconds >= preStopSleepSeconds + drain timeout + margin
  progressDeadlineSeconds        >  terminationGracePeriodSeconds
Left at 0, both are derived from the drain timeout; set by hand, a value that breaks the
invariant fails the render instead of silently cutting a drain short. Every message names
the value to change.
*/}}

{{- define "ramen.drainMode" -}}
{{- $key := printf "%s.drain.mode" .Chart.Name -}}
{{- $mode := .Values.drain.mode -}}
{{- if not $mode -}}
{{- $key = "global.config.drain.mode" -}}
{{- $mode = .Values.global.config.drain.mode | default "complete" -}}
{{- end -}}
{{- if not (has $mode (list "complete" "interrupt")) -}}
{{- fail (printf "%s is %q: it must be complete or interrupt" $key (toString $mode)) -}}
{{- end -}}
{{- $mode -}}
{{- end -}}

{{/* A whole number >= $min (seconds, replicas), or a failure naming the value: (list <value> <key> <min>). */}}
{{- define "ramen.wholeNumber" -}}
{{- $value := index . 0 -}}
{{- $key := index . 1 -}}
{{- $min := index . 2 | int -}}
{{- if not (or (kindIs "int" $value) (kindIs "int64" $value) (and (kindIs "float64" $value) (eq (float64 (int64 $value)) $value))) -}}
{{- fail (printf "%s is %v: it must be a whole number" $key $value) -}}
{{- end -}}
{{- if lt (int $value) $min -}}
{{- fail (printf "%s is %v: it must be at least %d" $key $value $min) -}}
{{- end -}}
{{- int $value -}}
{{- end -}}

{{- define "ramen.drainTimeoutSeconds" -}}
{{- if .Values.drain.timeoutSeconds -}}
{{- include "ramen.wholeNumber" (list .Values.drain.timeoutSeconds (printf "%s.drain.timeoutSeconds" .Chart.Name) 1) -}}
{{- else -}}
{{- include "ramen.wholeNumber" (list (.Values.global.config.drain.timeoutSeconds | default 30) "global.config.drain.timeoutSeconds" 1) -}}
{{- end -}}
{{- end -}}

{{- define "ramen.terminationGracePeriodSeconds" -}}
{{- $timeout := include "ramen.drainTimeoutSeconds" . | int -}}
{{- $margin := include "ramen.wholeNumber" (list (.Values.global.config.drain.marginSeconds | default 30) "global.config.drain.marginSeconds" 0) | int -}}
{{- $sleep := include "ramen.wholeNumber" (list (.Values.preStopSleepSeconds | default 0) (printf "%s.preStopSleepSeconds" .Chart.Name) 0) | int -}}
{{- $floor := add $sleep $timeout $margin | int -}}
{{- $key := printf "%s.terminationGracePeriodSeconds" .Chart.Name -}}
{{- $set := include "ramen.wholeNumber" (list (.Values.terminationGracePeriodSeconds | default 0) $key 0) | int -}}
{{- if eq $set 0 -}}
{{- $floor -}}
{{- else if lt $set $floor -}}
{{- fail (printf "%s=%d is below preStopSleepSeconds (%d) + drain timeout (%d) + global.config.drain.marginSeconds (%d) = %d: Kubernetes would SIGKILL the pod while it drains" $key $set $sleep $timeout $margin $floor) -}}
{{- else -}}
{{- $set -}}
{{- end -}}
{{- end -}}

{{- define "ramen.progressDeadlineSeconds" -}}
{{- $grace := include "ramen.terminationGracePeriodSeconds" . | int -}}
{{- $key := printf "%s.progressDeadlineSeconds" .Chart.Name -}}
{{- $set := include "ramen.wholeNumber" (list (.Values.progressDeadlineSeconds | default 0) $key 0) | int -}}
{{- if eq $set 0 -}}
{{- max 600 (add $grace 60) -}}
{{- else if le $set $grace -}}
{{- fail (printf "%s=%d must be above terminationGracePeriodSeconds (%d): a rollout waiting on a draining pod would be marked failed while the new pods already serve" $key $set $grace) -}}
{{- else -}}
{{- $set -}}
{{- end -}}
{{- end -}}
