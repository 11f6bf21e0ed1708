{{- define "kx.name" -}}{{ .Release.Name }}{{- end }}
{{- define "kx.labels" -}}
app.kubernetes.io/part-of: kube-extender
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end }}
{{- define "kx.extenderSelector" -}}
app.kubernetes.io/name: kube-extender
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
{{- define "kx.tlsSecret" -}}
{{- if .Values.tls.certManager.enabled }}{{ include "kx.name" . }}-tls{{ else }}{{ required "tls.secretName (or tls.certManager.enabled) is required with tls.enabled" .Values.tls.secretName }}{{ end }}
{{- end }}
{{- define "kx.clientSecret" -}}
{{- if .Values.tls.certManager.enabled }}{{ include "kx.name" . }}-scheduler-client{{ else }}{{ required "tls.clientSecretName (or tls.certManager.enabled) is required with tls.enabled and scheduler.enabled" .Values.tls.clientSecretName }}{{ end }}
{{- end }}
{{- define "kx.securityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end }}
{{- define "kx.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ . }}
runAsGroup: {{ . }}
seccompProfile:
  type: RuntimeDefault
{{- end }}
