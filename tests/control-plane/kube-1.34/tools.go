//go:build tools

// Package tools pins the commands this module builds so that `go mod tidy`
// keeps their dependencies in go.sum: the control plane only, as the oldest
// supported Kubernetes runs no node.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
