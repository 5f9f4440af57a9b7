package kube

import corev1 "k8s.io/api/core/v1"

// backing are the objects of the app's backing services (filled below).
func (r *renderer) backing() []Object { return nil }

// backingEnv carries each backing service's address to the hosts.
func (r *renderer) backingEnv() []corev1.EnvVar { return nil }
