//! The engine as the runtime runs it: a [`Reconciler`] whose hooks are the engine's own
//! (what it remembers of its writes and of each object, the shared listings it lets go
//! of, the Secrets the adapter says an object reads). Each method is one call: the runtime
//! knows this trait, never the [`Adapter`].

use std::future::Future;
use std::sync::Arc;

use super::{Engine, EngineError};
use crate::action::Action;
use crate::adapter::Adapter;
use crate::cache::Cache;
use crate::context::Shared;
use crate::reconciler::Reconciler;
use crate::resync::Resync;
use crate::secret_users::waits_for_a_missing_secret;

impl<A: Adapter> Reconciler for Engine<A> {
    type Kind = A::Kind;
    type Error = EngineError;
    const KIND: &'static str = A::KIND;
    const READS_SECRETS: bool = true;

    fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    fn cache(&self) -> &Cache<A::Kind> {
        Engine::cache(self)
    }

    fn resync(&self) -> &Resync {
        &self.resync
    }

    fn reconcile(
        self: Arc<Self>,
        obj: Arc<A::Kind>,
    ) -> impl Future<Output = Result<Action, EngineError>> + Send {
        Engine::reconcile(self, obj)
    }

    fn error_policy(&self, key: &str, error: &EngineError) -> Action {
        Engine::error_policy(self, key, error)
    }

    fn is_echo(&self, obj: &A::Kind) -> bool {
        Engine::is_echo(self, obj)
    }

    fn caught_up(&self, obj: &A::Kind) {
        Engine::caught_up(self, obj)
    }

    fn forget(&self, key: &str) {
        Engine::forget(self, key)
    }

    fn release_unread_listings(&self) {
        Engine::release_unread_listings(self)
    }

    fn secrets(&self, obj: &A::Kind) -> Vec<String> {
        self.adapter.secrets(obj)
    }

    fn waits_for_a_missing_secret(&self, obj: &A::Kind) -> bool {
        waits_for_a_missing_secret(obj)
    }
}
