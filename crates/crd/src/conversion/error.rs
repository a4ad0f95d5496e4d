//! What goes wrong converting an object between versions.

/// An object that cannot be converted, naming the field and what it must be.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConversionError {
    /// A value the other version cannot say: the rule it breaks, in the words of the
    /// version it was written in.
    #[error("{field}: {rule}")]
    Invalid { field: String, rule: String },
    /// The object does not read as its kind (a field of the wrong type, a required one
    /// missing).
    #[error("{field}: {message}")]
    Unreadable { field: String, message: String },
    /// An `apiVersion` this operator does not serve.
    #[error("apiVersion {0:?}: must be gpucloud.io/v1alpha1 or gpucloud.io/v1beta1")]
    UnknownVersion(String),
    /// A `kind` this operator does not serve.
    #[error("kind {0:?}: not a kind of gpucloud.io")]
    UnknownKind(String),
}

impl ConversionError {
    pub(crate) fn invalid(field: &str, rule: &str) -> Self {
        Self::Invalid {
            field: field.to_string(),
            rule: rule.to_string(),
        }
    }
}
