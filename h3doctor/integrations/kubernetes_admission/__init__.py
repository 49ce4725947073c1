"""`h3doctor admission`: a validating admission webhook judging the sglang launches of the pod
templates the API server is asked to admit (docs/kubernetes.md)."""
