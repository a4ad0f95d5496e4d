//! Prometheus metrics of the operator.
