//! One watch of one resource (in one namespace, or in every namespace) that lives through
//! the apiserver going away: it lists, then watches from the listing's version, and tells
//! the same events as kube's `watcher` (`Init`, `InitApply`…, `InitDone`, then `Apply` and
//! `Delete`), so that every store and merge downstream reads it unchanged.
//!
//! What it does when a request fails ([`Failure`]):
//! - **410 (Gone, Expired)**: the version it watched from is gone (etcd compacted it, or a
//!   restarted apiserver's watch cache starts after it). It lists again at once, from a
//!   quorum read (never from the apiserver's cache, which may be older still), and never
//!   watches from that version again.
//! - **No answer, 429, 5xx**: it asks again after [`Retry`]'s delay: 200 ms, doubling, at
//!   most [`RETRY_CAP`], jittered, so that a returning apiserver is seen within seconds.
//! - **Another refusal** (403…): the same delay; the apiserver is there, the log says why.
//!
//! Its [`WatchHealth`] counts it as disconnected from a failed request until the next
//! answered one (a listing page, a watch started, a bookmark).
//!
//! Why not kube's `watcher` with `default_backoff`: that backoff grows to 30 s and resets
//! only after 120 s without an error, and applies to a 410 as to any error; a watch that
//! expired while the apiserver was away waited up to a minute to list again. Its watcher also
//! keeps watching from the same version when the watch request itself is refused with 410,
//! and tells nobody when a watch starts again, so a connection state cannot be read from it.

use std::collections::VecDeque;
use std::fmt::Debug;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource, ResourceExt};
use rand::Rng;
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use super::watch_health::{Failure, WatchHealth};

/// The longest wait between two attempts while the apiserver does not answer.
pub const RETRY_CAP: Duration = Duration::from_secs(3);
/// The first wait after a failure.
const RETRY_FIRST: Duration = Duration::from_millis(200);

/// The longest a watch lasts before the apiserver ends it (and it goes on from the last
/// version it saw), when its configuration names no time (`--watch-timeout`).
pub const WATCH_TIMEOUT: Duration = Duration::from_secs(290);
/// How long after its own end a watch may stay silent before it is dropped and started
/// again: an apiserver that vanished without closing the connection answers nothing.
const WATCH_GRACE: Duration = Duration::from_secs(30);

/// Pure: the delays between attempts while requests fail.
#[derive(Debug, Default)]
pub struct Retry {
    failures: u32,
}

impl Retry {
    /// The delay before the next attempt, the failure just seen counted; without jitter.
    pub fn next_delay(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let factor = 2u32.saturating_pow(self.failures.saturating_sub(1).min(16));
        RETRY_FIRST.saturating_mul(factor).min(RETRY_CAP)
    }

    /// An answer came: the next failure starts from the first delay.
    pub fn reset(&mut self) {
        self.failures = 0;
    }
}

/// The configuration of a watch: objects with the labels of `selector` (all without one),
/// each watch request ended by the apiserver after at most `timeout`.
pub fn watch_config(selector: Option<&str>, timeout: Duration) -> watcher::Config {
    let config = watcher::Config::default()
        .timeout(u32::try_from(timeout.as_secs()).unwrap_or(u32::MAX).max(1));
    match selector {
        Some(selector) => config.labels(selector),
        None => config,
    }
}

/// Pure: how long one watch request lasts, for a longest time of `timeout_s` seconds:
/// drawn between two thirds of it and all of it, so that the watches of a process do not
/// all start again together.
fn watch_seconds(timeout_s: u32, draw: f64) -> u32 {
    let shortest = (timeout_s * 2).div_ceil(3);
    let span = f64::from(timeout_s - shortest);
    shortest + (span * draw.clamp(0.0, 1.0)).round() as u32
}

/// `d` less up to a fifth, at random: watches that failed together do not retry together.
fn jittered(d: Duration) -> Duration {
    d.mul_f64(rand::rng().random_range(0.8..=1.0))
}

/// What this watch can list and watch: any resource read from JSON (whole objects, or
/// `PartialObjectMeta` for metadata only).
pub trait Listed: Resource + Clone + Debug + DeserializeOwned + Send + Sync + 'static {}

impl<K> Listed for K where K: Resource + Clone + Debug + DeserializeOwned + Send + Sync + 'static {}

/// The events of kind `K` that `api` lists and watches, with the selectors, page size and
/// longest watch (`timeout`, see [`watch_config`]) of `config` (its list semantic is not
/// used: a listing is always a quorum read), its
/// connection reported to `health`. Errors are told as they come (the caller may log them
/// at debug: `health` has said what matters) and never end the stream.
pub fn watch_loop<K: Listed>(
    api: Api<K>,
    config: watcher::Config,
    health: WatchHealth,
) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static {
    let state = Loop {
        api,
        config,
        health,
        retry: Retry::default(),
        wait: None,
        phase: Phase::Start,
    };
    futures::stream::unfold(state, |mut state| async move {
        let item = state.next().await;
        Some((item, state))
    })
}

enum Phase<K> {
    /// A listing starts (told as `Init`).
    Start,
    /// A listing under way: the objects of the last page still to tell, the token of the
    /// next page, and the listing's version once its last page came.
    Listing {
        objects: VecDeque<K>,
        continue_token: Option<String>,
        version: Option<String>,
    },
    /// To watch from `version`.
    Watch { version: String },
    /// Watching from `version` (the last one seen) until `ends`.
    Watching {
        version: String,
        events: BoxStream<'static, kube::Result<WatchEvent<K>>>,
        ends: Instant,
    },
}

struct Loop<K> {
    api: Api<K>,
    config: watcher::Config,
    health: WatchHealth,
    retry: Retry,
    /// The delay to wait before the next request (after a failure).
    wait: Option<Duration>,
    phase: Phase<K>,
}

impl<K: Listed> Loop<K> {
    async fn next(&mut self) -> Result<Event<K>, watcher::Error> {
        loop {
            if let Some(wait) = self.wait.take() {
                tokio::time::sleep(wait).await;
            }
            if let Some(told) = self.step().await {
                return told;
            }
        }
    }

    /// One step; `None`: nothing to tell yet.
    async fn step(&mut self) -> Option<Result<Event<K>, watcher::Error>> {
        match std::mem::replace(&mut self.phase, Phase::Start) {
            Phase::Start => {
                self.phase = Phase::Listing {
                    objects: VecDeque::new(),
                    continue_token: None,
                    version: None,
                };
                Some(Ok(Event::Init))
            }
            Phase::Listing {
                mut objects,
                continue_token,
                version,
            } => {
                if let Some(object) = objects.pop_front() {
                    self.phase = Phase::Listing {
                        objects,
                        continue_token,
                        version,
                    };
                    return Some(Ok(Event::InitApply(object)));
                }
                if let (None, Some(version)) = (&continue_token, version) {
                    self.phase = Phase::Watch { version };
                    return Some(Ok(Event::InitDone));
                }
                self.list_page(continue_token).await
            }
            Phase::Watch { version } => self.start_watch(version).await,
            Phase::Watching {
                version,
                events,
                ends,
            } => self.on_watch_event(version, events, ends).await,
        }
    }

    async fn list_page(
        &mut self,
        continue_token: Option<String>,
    ) -> Option<Result<Event<K>, watcher::Error>> {
        let params = ListParams {
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            limit: self.config.page_size,
            continue_token,
            ..ListParams::default()
        };
        match self.api.list(&params).await {
            Ok(list) => {
                self.answered();
                let version = list.metadata.resource_version.filter(|v| !v.is_empty());
                let continue_token = list.metadata.continue_.filter(|t| !t.is_empty());
                if version.is_none() && continue_token.is_none() {
                    return Some(self.no_version());
                }
                self.phase = Phase::Listing {
                    objects: list.items.into(),
                    continue_token,
                    version,
                };
                None
            }
            // A listing that fails (a page's token expired, or no answer) starts again
            // from its first page, told as a new `Init`.
            Err(error) => {
                self.failed(Failure::of(&error), &error, Phase::Start);
                Some(Err(watcher::Error::InitialListFailed(error)))
            }
        }
    }

    async fn start_watch(&mut self, version: String) -> Option<Result<Event<K>, watcher::Error>> {
        let longest = self
            .config
            .timeout
            .unwrap_or(WATCH_TIMEOUT.as_secs() as u32)
            .max(1);
        let seconds = watch_seconds(longest, rand::rng().random_range(0.0..=1.0));
        let params = WatchParams {
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            timeout: Some(seconds),
            bookmarks: true,
            send_initial_events: false,
        };
        match self.api.watch(&params, &version).await {
            Ok(events) => {
                self.answered();
                self.phase = Phase::Watching {
                    version,
                    events: events.boxed(),
                    ends: Instant::now() + Duration::from_secs(u64::from(seconds)) + WATCH_GRACE,
                };
                None
            }
            Err(error) => {
                let failure = Failure::of(&error);
                let next = match failure {
                    Failure::Expired => Phase::Start,
                    _ => Phase::Watch { version },
                };
                self.failed(failure, &error, next);
                Some(Err(watcher::Error::WatchStartFailed(error)))
            }
        }
    }

    async fn on_watch_event(
        &mut self,
        version: String,
        mut events: BoxStream<'static, kube::Result<WatchEvent<K>>>,
        ends: Instant,
    ) -> Option<Result<Event<K>, watcher::Error>> {
        let next = tokio::time::timeout_at(ends, events.next()).await;
        let watching = |version: String, events| Phase::Watching {
            version,
            events,
            ends,
        };
        match next {
            Ok(Some(Ok(WatchEvent::Added(obj) | WatchEvent::Modified(obj)))) => {
                self.on_object(events, ends, obj, Event::Apply)
            }
            Ok(Some(Ok(WatchEvent::Deleted(obj)))) => {
                self.on_object(events, ends, obj, Event::Delete)
            }
            Ok(Some(Ok(WatchEvent::Bookmark(bookmark)))) => {
                self.answered();
                self.phase = watching(bookmark.metadata.resource_version, events);
                None
            }
            Ok(Some(Ok(WatchEvent::Error(status)))) => {
                let failure = Failure::of_status(status.code);
                let next = match failure {
                    Failure::Expired => Phase::Start,
                    _ => Phase::Watch { version },
                };
                self.failed(failure, &status, next);
                Some(Err(watcher::Error::WatchError(status)))
            }
            // The connection broke mid-watch (the apiserver stopping): watch again from
            // the last version after the first delay, not in a loop.
            Ok(Some(Err(error))) => {
                self.failed(Failure::of(&error), &error, Phase::Watch { version });
                Some(Err(watcher::Error::WatchFailed(error)))
            }
            // The apiserver ended the watch (its timeout), or it stayed silent past its end:
            // go on from the last version at once.
            Ok(None) | Err(_) => {
                self.phase = Phase::Watch { version };
                None
            }
        }
    }

    /// An object the watch brought: told, and its version is where the watch goes on from.
    fn on_object(
        &mut self,
        events: BoxStream<'static, kube::Result<WatchEvent<K>>>,
        ends: Instant,
        obj: K,
        told: fn(K) -> Event<K>,
    ) -> Option<Result<Event<K>, watcher::Error>> {
        self.answered();
        let seen = obj.resource_version().unwrap_or_default();
        if seen.is_empty() {
            return Some(self.no_version());
        }
        self.phase = Phase::Watching {
            version: seen,
            events,
            ends,
        };
        Some(Ok(told(obj)))
    }

    /// An answer with no version to go on from: list again, after the retry delay (an
    /// apiserver that keeps answering so would otherwise be asked in a loop).
    fn no_version(&mut self) -> Result<Event<K>, watcher::Error> {
        let error = watcher::Error::NoResourceVersion;
        self.failed(Failure::Refused, &error, Phase::Start);
        Err(error)
    }

    fn answered(&mut self) {
        self.retry.reset();
        self.health.connected();
    }

    /// A request failed: what follows is `next`, at once after a 410, after the retry
    /// delay otherwise.
    fn failed(&mut self, failure: Failure, error: &dyn std::fmt::Display, next: Phase<K>) {
        let wait = match failure {
            Failure::Expired => Duration::ZERO,
            _ => jittered(self.retry.next_delay()),
        };
        self.health.failed(failure, error, wait);
        self.wait = (!wait.is_zero()).then_some(wait);
        self.phase = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_doubles_from_200ms_to_a_3s_cap_and_starts_over_after_an_answer() {
        let mut retry = Retry::default();
        let delays: Vec<u128> = (0..7).map(|_| retry.next_delay().as_millis()).collect();
        assert_eq!(delays, [200, 400, 800, 1600, 3000, 3000, 3000]);
        // However long the outage, the next attempt is at most RETRY_CAP away.
        for _ in 0..1000 {
            assert!(retry.next_delay() <= RETRY_CAP);
        }
        retry.reset();
        assert_eq!(retry.next_delay(), RETRY_FIRST);
    }

    #[test]
    fn a_watch_lasts_between_two_thirds_of_its_timeout_and_all_of_it() {
        assert_eq!(watch_seconds(290, 0.0), 194);
        assert_eq!(watch_seconds(290, 1.0), 290);
        assert_eq!(watch_seconds(3, 0.0), 2);
        assert_eq!(watch_seconds(3, 1.0), 3);
        assert_eq!(watch_seconds(1, 0.5), 1);
        let config = watch_config(Some("team=a"), Duration::from_millis(300));
        assert_eq!(
            config.timeout,
            Some(1),
            "never 0: the apiserver's default instead"
        );
        assert_eq!(config.label_selector.as_deref(), Some("team=a"));
    }

    #[test]
    fn the_jitter_only_shortens() {
        for _ in 0..100 {
            let d = jittered(RETRY_CAP);
            assert!(d <= RETRY_CAP && d >= RETRY_CAP.mul_f64(0.8), "{d:?}");
        }
    }
}
