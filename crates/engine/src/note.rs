//! What users should hear of besides the outcome of a pass (the engine reports that one
//! itself): a kind's word on how a create went, said with the object made or with the
//! failure. The engine publishes each as an Event.

/// One Event to publish, as a kind words it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub reason: String,
    pub warning: bool,
    /// The Event's action (`Create`, `Update`).
    pub action: &'static str,
    pub message: String,
}

impl Note {
    /// The Event of a change made in place, with the reason `Updated`.
    pub fn updated(message: impl Into<String>) -> Self {
        Self::update("Updated", message)
    }

    /// The Event of a change made in place, with its own reason (`Stopped`, `Resumed`).
    pub fn update(reason: &str, message: impl Into<String>) -> Self {
        Self {
            reason: reason.to_string(),
            warning: false,
            action: "Update",
            message: message.into(),
        }
    }
}
