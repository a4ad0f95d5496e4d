{{- define "gpucloud-operator.name" -}}gpucloud-operator{{- end -}}

{{- define "gpucloud-operator.labels" -}}
app.kubernetes.io/name: gpucloud-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "gpucloud-operator.selector" -}}
app.kubernetes.io/name: gpucloud-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "gpucloud-operator.fullname" -}}
{{- if eq .Release.Name "gpucloud-operator" -}}gpucloud-operator{{- else -}}{{ printf "%s-gpucloud-operator" .Release.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{/* The ClusterRole a scraper of /metrics is bound to: the kustomize install's name for the
release named gpucloud-operator, else one per release. */}}
{{- define "gpucloud-operator.metricsReader" -}}
{{- if eq .Release.Name "gpucloud-operator" -}}gpucloud-metrics-reader{{- else -}}{{ printf "%s-gpucloud-metrics-reader" .Release.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "gpucloud-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}{{ .Values.serviceAccount.name | default (include "gpucloud-operator.fullname" .) }}{{- else -}}{{ .Values.serviceAccount.name | default "default" }}{{- end -}}
{{- end -}}

{{/* The rules below name every kind of src/kinds/mod.rs; tests/manifests.rs checks them. */}}

{{/* Rules on the watched objects; the same for the ClusterRole and each Role. */}}
{{- define "gpucloud-operator.rules" -}}
- apiGroups: ["gpucloud.io"]
  resources: ["pods", "endpoints", "networkvolumes", "registrycredentials", "templates", "budgets", "clusters"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["gpucloud.io"]
  resources: ["pods/status", "endpoints/status", "networkvolumes/status", "registrycredentials/status", "templates/status", "budgets/status", "clusters/status"]
  verbs: ["patch"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["create", "list", "patch", "delete"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end -}}

{{/* In every mode (the ClusterRole, or with `namespaces` a ClusterRole of its own): each CRD
is read at start-up to check that it is installed, and the kind's CRD before each delete of a
remote object (one being deleted turns the delete into a release). */}}
{{- define "gpucloud-operator.crdRules" -}}
- apiGroups: ["apiextensions.k8s.io"]
  resources: ["customresourcedefinitions"]
  resourceNames: ["pods.gpucloud.io", "endpoints.gpucloud.io", "networkvolumes.gpucloud.io", "registrycredentials.gpucloud.io", "templates.gpucloud.io", "budgets.gpucloud.io", "clusters.gpucloud.io"]
  # patch: their spec.conversion, pointed at the conversion webhook with its CA.
  verbs: ["get", "patch"]
{{- end -}}

{{/* The Role in the release namespace (the operator's, where its Lease is), in every mode:
the released record (crates/engine/src/released/), ConfigMaps made on first use, added to
by merge patch and read by a label-selected list. tests/manifests.rs checks these too. */}}
{{- define "gpucloud-operator.operatorNamespaceRules" -}}
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["create", "list", "patch"]
{{- end -}}

{{/* The user roles' names: gpucloud-view and gpucloud-edit for the release named
gpucloud-operator (as in deploy/base), RELEASE-gpucloud-view and -edit for any other, so
that two releases do not claim one ClusterRole. */}}
{{- define "gpucloud-operator.userRolePrefix" -}}
{{- if eq .Release.Name "gpucloud-operator" -}}gpucloud{{- else -}}{{ printf "%s-gpucloud" .Release.Name }}{{- end -}}
{{- end -}}

{{/* The user roles' rules (templates/user-roles.yaml), the same as deploy/base/user-roles.yaml;
they name every kind of src/kinds/mod.rs, which tests/manifests.rs checks. */}}
{{- define "gpucloud-operator.viewRules" -}}
- apiGroups: ["gpucloud.io"]
  resources: ["pods", "endpoints", "networkvolumes", "registrycredentials", "templates", "budgets", "clusters", "pods/status", "endpoints/status", "networkvolumes/status", "registrycredentials/status", "templates/status", "budgets/status", "clusters/status"]
  verbs: ["get", "list", "watch"]
{{- end -}}

{{- define "gpucloud-operator.editRules" -}}
- apiGroups: ["gpucloud.io"]
  resources: ["pods", "endpoints", "networkvolumes", "registrycredentials", "templates", "budgets", "clusters"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]
- apiGroups: ["gpucloud.io"]
  resources: ["pods/status", "endpoints/status", "networkvolumes/status", "registrycredentials/status", "templates/status", "budgets/status", "clusters/status"]
  verbs: ["get", "list", "watch"]
{{- end -}}
