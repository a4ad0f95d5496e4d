//! Notices rotated keys with `get` alone: the operator never lists or watches Secrets, so
//! that its token cannot read the Secrets of the cluster that no object names. Every
//! interval, a kind reads again (metadata only) each Secret its objects name and the
//! default key's Secret ([`crate::secret_users`]); a Secret whose resourceVersion moved, or
//! that appeared, disappeared or became readable or unreadable, gets every object that reads
//! it a pass, as a watch event did ([`crate::secret_versions`] decides).
//!
//! A Secret no reading knows yet is read once before the pass of an object that names it
//! ([`SecretRecheck::before_pass`]): a rotation between that pass and the next interval is
//! then a change against a reading older than the pass, not the interval's first reading.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt, stream};
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client};
use tracing::{debug, warn};

use super::reconciler::Reconciler;
use super::secret_users::{NamedSecret, named_secrets, secrets_of, users_of_secret};
use super::secret_versions::{Reading, SecretVersions, Seen, Users, users_to_pass};

/// Secrets read at once in one interval's round: enough that a few hundred take well under
/// a second, few enough not to crowd the apiserver.
const READS_AT_ONCE: usize = 4;

/// What one `get` of Secret `namespace/name` says. Its metadata only: the value is never
/// read here. A 403 is a reading (the operator may not read it), not a failure.
async fn read(client: &Client, namespace: &str, name: &str) -> Result<Reading, kube::Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    match secrets.get_metadata_opt(name).await {
        Ok(Some(meta)) => Ok(Reading::present(meta.metadata.resource_version.as_deref())),
        Ok(None) => Ok(Reading::Absent),
        Err(kube::Error::Api(e)) if e.code == 403 => Ok(Reading::Forbidden),
        Err(e) => Err(e),
    }
}

/// The readings of one kind's Secrets; shared by its passes and its interval.
#[derive(Default)]
pub struct SecretRecheck {
    versions: parking_lot::Mutex<SecretVersions>,
    /// The Secrets the objects named when the cache was at this generation: a round
    /// unpacks every object only when the cache moved since (a converged install's rounds
    /// unpack nothing).
    named: parking_lot::Mutex<Option<(u64, Vec<NamedSecret>)>>,
}

impl SecretRecheck {
    /// Reads the Secrets of `obj` that no reading knows yet (each known one costs a look
    /// in the table), before its pass reads them itself. A failed read is left to the
    /// pass, which reports it in the object's status.
    pub async fn before_pass<R: Reconciler>(&self, reconciler: &R, obj: &R::Kind) {
        let shared = reconciler.shared();
        let default = shared.credentials.default_secret();
        for secret in secrets_of(obj, |o| reconciler.secrets(o), default) {
            if self.versions.lock().knows(secret.key) {
                continue;
            }
            match read(&shared.kube, &secret.namespace, &secret.name).await {
                Ok(reading) => self.versions.lock().start_from(secret.key, reading),
                Err(error) => debug!(
                    kind = R::KIND,
                    namespace = %secret.namespace,
                    secret = %secret.name,
                    %error,
                    "Secret not read before the pass"
                ),
            }
        }
    }

    /// Every Secret the kind's objects name (see [`named_secrets`]), derived again only
    /// when the cache moved since the last time.
    fn named<R: Reconciler>(&self, reconciler: &R) -> Vec<NamedSecret> {
        let generation = reconciler.cache().generation();
        if let Some((at, named)) = self.named.lock().as_ref()
            && *at == generation
        {
            return named.clone();
        }
        let names_of = |o: &R::Kind| reconciler.secrets(o);
        let default = reconciler.shared().credentials.default_secret();
        let named = named_secrets(reconciler.cache(), names_of, default);
        *self.named.lock() = Some((generation, named.clone()));
        named
    }

    /// One interval's round: reads every Secret the kind's objects name, and gives the keys
    /// of the objects that need a pass for it. Secrets no object names any more are
    /// forgotten.
    async fn round<R: Reconciler>(&self, reconciler: &R) -> Vec<String> {
        let credentials = &reconciler.shared().credentials;
        let names_of = |o: &R::Kind| reconciler.secrets(o);
        let missing_it = |o: &R::Kind| reconciler.waits_for_a_missing_secret(o);
        let named = self.named(reconciler);
        let keys: HashSet<u64> = named.iter().map(|s| s.key).collect();
        self.versions.lock().keep_only(|k| keys.contains(&k));
        drop(keys);

        let client = &reconciler.shared().kube;
        let readings: Vec<(NamedSecret, Result<Reading, kube::Error>)> = stream::iter(named)
            .map(|secret| async move {
                let reading = read(client, &secret.namespace, &secret.name).await;
                (secret, reading)
            })
            .buffer_unordered(READS_AT_ONCE)
            .collect()
            .await;

        let mut users = Vec::new();
        let mut failed = 0usize;
        let mut first_error = None;
        for (secret, reading) in readings {
            let reading = match reading {
                Ok(reading) => reading,
                Err(error) => {
                    // What was known stays: the next round compares with it.
                    failed += 1;
                    first_error.get_or_insert(error);
                    continue;
                }
            };
            let seen = self.versions.lock().record(secret.key, reading);
            let Some(which) = users_to_pass(seen, reading) else {
                continue;
            };
            let (ns, name) = (secret.namespace.as_str(), secret.name.as_str());
            if seen == Seen::Changed {
                credentials.forget(ns, name);
            }
            // Debug only: a Secret that stays missing or refused is said once, when it
            // becomes so, and a rotation is routine.
            debug!(kind = R::KIND, namespace = %ns, secret = %name, now = reading.describe(), ?seen, "Secret read again");
            users.extend(users_of_secret(
                reconciler.cache(),
                names_of,
                ns,
                name,
                credentials.is_default_secret(ns, name),
                (which == Users::MissingIt).then_some(&missing_it as &dyn Fn(&R::Kind) -> bool),
            ));
        }
        if let Some(error) = first_error {
            warn!(kind = R::KIND, failed, %error, "could not read Secrets again; next try at the next interval");
        }
        users
    }
}

/// The keys of the objects of `reconciler`'s kind that need a pass because a Secret they read
/// changed, found by reading those Secrets again every `every`, from the time `synced`
/// says the kind's cache holds a whole listing. Ends if `synced`'s sender goes.
pub fn changed_secret_users<R: Reconciler>(
    reconciler: Arc<R>,
    recheck: Arc<SecretRecheck>,
    synced: tokio::sync::watch::Receiver<bool>,
    every: Duration,
) -> impl Stream<Item = String> + Send {
    struct State<R> {
        reconciler: Arc<R>,
        recheck: Arc<SecretRecheck>,
        synced: tokio::sync::watch::Receiver<bool>,
        tick: Option<tokio::time::Interval>,
    }
    let state = State {
        reconciler,
        recheck,
        synced,
        tick: None,
    };
    stream::unfold(state, move |mut state| async move {
        let tick = match &mut state.tick {
            Some(tick) => tick,
            None => {
                state.synced.wait_for(|synced| *synced).await.ok()?;
                let mut tick = tokio::time::interval(every);
                // A round slower than the interval starts the next one an interval later.
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                state.tick.insert(tick)
            }
        };
        tick.tick().await;
        let users = state.recheck.round(state.reconciler.as_ref()).await;
        Some((stream::iter(users), state))
    })
    .flatten()
}
