{{/* Names, labels and the few values derived from the configuration. */}}

{{- define "vk-provider.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name, at most 63 characters (a DNS-1123 label). */}}
{{- define "vk-provider.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "vk-provider.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vk-provider.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vk-provider.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "vk-provider.labels" -}}
helm.sh/chart: {{ include "vk-provider.chart" . }}
{{ include "vk-provider.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "vk-provider.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "vk-provider.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "vk-provider.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/*
The provider's configuration file: .Values.config with node.name from .Values.node.name and
kubernetes.credentials from .Values.credentials, its sections in the order of config.example.yaml. Sections the chart does not know (only
past values.schema.json, with --skip-schema-validation) are kept, so the provider refuses
them with the key's path instead of their being dropped. An empty
kubeletServer.clientCAFile with auth webhook or x509 becomes the cluster CA the pod's
service account mounts: it signs the apiserver's kubelet client certificate on standard
clusters, so kubectl logs/exec/port-forward through the apiserver are authenticated. An
empty kubeletServer.healthzListen becomes 0.0.0.0:10248, where the probes GET /healthz; with
hostNetwork the ports 10250 and 10248 of listen and healthzListen become hostNetworkPorts'. An
empty pods.clusterDNS becomes the clusterIP of the kube-system/kube-dns Service when the
chart can look it up (helm install/upgrade against a cluster; nothing under helm template).
*/}}
{{- define "vk-provider.config" -}}
{{- $config := deepCopy .Values.config -}}
{{- $node := default (dict) $config.node -}}
{{- $_ := set $node "name" .Values.node.name -}}
{{- $_ := set $config "node" $node -}}
{{- $kubernetes := default (dict) $config.kubernetes -}}
{{- $_ := set $kubernetes "credentials" .Values.credentials -}}
{{- $_ := set $config "kubernetes" $kubernetes -}}
{{- $server := default (dict) $config.kubeletServer -}}
{{- if and (ne (default "webhook" $server.auth) "none") (not $server.clientCAFile) -}}
{{- $_ := set $server "clientCAFile" "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt" -}}
{{- $_ := set $config "kubeletServer" $server -}}
{{- end -}}
{{- $_ := set $server "listen" (include "vk-provider.kubeletListen" .) -}}
{{- $_ := set $server "healthzListen" (include "vk-provider.healthzListen" .) -}}
{{- $_ := set $config "kubeletServer" $server -}}
{{- $pods := default (dict) $config.pods -}}
{{- if not $pods.clusterDNS -}}
{{- $kubeDNS := lookup "v1" "Service" "kube-system" "kube-dns" -}}
{{- $clusterIP := dig "spec" "clusterIP" "" $kubeDNS -}}
{{- if and $clusterIP (ne $clusterIP "None") -}}
{{- $_ := set $pods "clusterDNS" (list $clusterIP) -}}
{{- $_ := set $config "pods" $pods -}}
{{- end -}}
{{- end -}}
{{- $order := list "node" "kubernetes" "docker" "pods" "staticPods" "kubeletServer" "status" "logging" "metrics" -}}
{{- range $section := $order -}}
{{- if hasKey $config $section }}
{{ toYaml (dict $section (get $config $section)) }}
{{- end -}}
{{- end -}}
{{- range $section, $value := $config -}}
{{- if not (has $section $order) }}
{{ toYaml (dict $section $value) }}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
`address` (host:port) with its port `taken` replaced by `port` when the pod is in the host's
network namespace (hostNetwork), where the host's own kubelet holds 10250 and 10248.
*/}}
{{- define "vk-provider.hostNetworkAddress" -}}
{{- $address := index . 0 -}}
{{- if and (index . 1).Values.hostNetwork (hasSuffix (printf ":%d" (index . 2)) $address) -}}
{{- printf "%s:%v" (trimSuffix (printf ":%d" (index . 2)) $address) (index . 3) -}}
{{- else -}}
{{- $address -}}
{{- end -}}
{{- end -}}

{{/* Where the kubelet API listens: config.kubeletServer.listen, moved off 10250 with hostNetwork. */}}
{{- define "vk-provider.kubeletListen" -}}
{{- include "vk-provider.hostNetworkAddress" (list .Values.config.kubeletServer.listen . 10250 .Values.hostNetworkPorts.kubelet) -}}
{{- end -}}

{{/* Where the probes' GET /healthz is served: config.kubeletServer.healthzListen, else
0.0.0.0:10248; moved off 10248 with hostNetwork. */}}
{{- define "vk-provider.healthzListen" -}}
{{- $listen := .Values.config.kubeletServer.healthzListen | default "0.0.0.0:10248" -}}
{{- include "vk-provider.hostNetworkAddress" (list $listen . 10248 .Values.hostNetworkPorts.healthz) -}}
{{- end -}}

{{/* The kubelet API port: the port of vk-provider.kubeletListen (host:port). */}}
{{- define "vk-provider.kubeletPort" -}}
{{- regexReplaceAll "^.*:" (include "vk-provider.kubeletListen" .) "" -}}
{{- end -}}

{{/* The Docker socket path when the engine is local (config.docker.host empty or unix://), else "". */}}
{{- define "vk-provider.socketPath" -}}
{{- $host := .Values.config.docker.host | default "" -}}
{{- if eq $host "" -}}
{{- .Values.engine.socketPath -}}
{{- else if hasPrefix "unix://" $host -}}
{{- trimPrefix "unix://" $host -}}
{{- end -}}
{{- end -}}

{{/*
What the provider's container and the pre-delete hook's container share: the engine's
address and TLS settings (engineEnv), the API server address when apiServer.host is set,
and the config, /tmp, socket, state directory and TLS volumes (engineVolumeMounts and
engineVolumes).
*/}}
{{- define "vk-provider.engineEnv" -}}
{{- $socket := include "vk-provider.socketPath" . -}}
{{- if .Values.apiServer.host }}
# Where in-cluster configuration finds the API (the kubelet sets these to the `kubernetes`
# Service, which only routes with kube-proxy).
- name: KUBERNETES_SERVICE_HOST
  value: {{ .Values.apiServer.host | quote }}
- name: KUBERNETES_SERVICE_PORT
  value: {{ .Values.apiServer.port | quote }}
{{- end }}
{{- if $socket }}
- name: DOCKER_HOST
  value: unix://{{ $socket }}
{{- end }}
{{- if .Values.engine.tlsSecretName }}
- name: DOCKER_TLS_VERIFY
  value: "1"
- name: DOCKER_CERT_PATH
  value: /etc/vk-provider/docker-tls
{{- end }}
{{- end -}}

{{- define "vk-provider.engineVolumeMounts" -}}
{{- $socket := include "vk-provider.socketPath" . -}}
- name: config
  mountPath: /etc/vk-provider
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- if $socket }}
- name: docker-socket
  mountPath: {{ $socket }}
- name: state
  mountPath: {{ .Values.config.docker.stateDir }}
  {{- if .Values.engine.subPathMounts }}
  # The provider's subPath bind mounts under stateDir must reach the host, where the engine is.
  mountPropagation: Bidirectional
  {{- end }}
{{- end }}
{{- if .Values.engine.tlsSecretName }}
- name: docker-tls
  mountPath: /etc/vk-provider/docker-tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "vk-provider.engineVolumes" -}}
{{- $socket := include "vk-provider.socketPath" . -}}
- name: config
  configMap:
    name: {{ include "vk-provider.fullname" . }}
- name: tmp
  emptyDir: {}
{{- if $socket }}
- name: docker-socket
  hostPath:
    path: {{ $socket }}
    type: Socket
# The engine bind-mounts files from here into containers: the same path on the host and
# in this pod.
- name: state
  hostPath:
    path: {{ .Values.config.docker.stateDir }}
    type: DirectoryOrCreate
{{- end }}
{{- if .Values.engine.tlsSecretName }}
- name: docker-tls
  secret:
    secretName: {{ .Values.engine.tlsSecretName }}
{{- end }}
{{- end -}}

{{/* Scheduling shared by the provider's pod and the pre-delete hook's pod (same hosts). */}}
{{- define "vk-provider.hostScheduling" -}}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
