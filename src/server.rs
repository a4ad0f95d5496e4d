//! The operator's HTTP server: `/metrics`, `/healthz`, `/readyz`.
