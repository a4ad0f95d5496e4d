//! Publishing `events.k8s.io/v1` Events as kube's `Recorder` does (a repeat within six
//! minutes extends the first Event's series instead of making a new Event), while keeping
//! far less per Event. kube's Recorder keeps a full copy of every Event it published for
//! those six minutes, with its key: creating N objects holds N of them. Here a published
//! Event costs a hash, a count and two times: its namespace and
//! name follow from the object it is about, which the repeat names again.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

/// How long a published Event can be extended by a repeat (kube's Recorder's window).
pub const SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);

/// One Event to publish.
pub struct EventSpec<'a> {
    pub warning: bool,
    pub reason: &'a str,
    pub action: &'a str,
    pub note: String,
}

/// What is remembered of a published Event: when it was made (its name says when, see
/// [`event_name`]), how often it happened, and when last. The times are nanoseconds since
/// the epoch: 24 bytes in all, smaller than two `Timestamp`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Published {
    first: i64,
    last: i64,
    count: i32,
}

fn nanos(t: Timestamp) -> i64 {
    i64::try_from(t.as_nanosecond()).unwrap_or(i64::MAX)
}

impl Published {
    /// Whether a repeat at `now` still extends this Event's series.
    fn open_at(&self, now: Timestamp) -> bool {
        let window = i64::try_from(SERIES_WINDOW.as_nanos()).unwrap_or(i64::MAX);
        self.last.saturating_add(window) > nanos(now)
    }
}

/// The name of the Event about `regarding` first published at `first`: unique per object
/// and instant, as kube's Recorder names them.
fn event_name(regarding: &ObjectReference, first: i64) -> String {
    format!(
        "{}.{:x}",
        regarding.name.as_deref().unwrap_or("object"),
        first
    )
}

/// What publishing an Event comes down to.
#[derive(Debug, PartialEq, Eq)]
pub enum Publish {
    /// A new Event, named `name`.
    Create { name: String },
    /// A repeat: Event `name` in `namespace` now counts `count`.
    Extend {
        namespace: String,
        name: String,
        count: i32,
    },
}

/// The Events published in the last [`SERIES_WINDOW`], by what makes two of them the same
/// Event (as kube's Recorder decides: type, action, reason and the object; not the note).
#[derive(Debug, Default)]
pub struct EventLog {
    published: HashMap<u64, Published>,
}

fn same_event_key(event: &EventSpec<'_>, regarding: &ObjectReference) -> u64 {
    crate::fingerprint::of((
        (event.warning, event.action, event.reason),
        (
            &regarding.api_version,
            &regarding.kind,
            &regarding.namespace,
            &regarding.name,
            &regarding.uid,
        ),
    ))
}

impl EventLog {
    /// Forgets the Events that a repeat at `now` could no longer extend.
    pub fn expire(&mut self, now: Timestamp) {
        self.published.retain(|_, p| p.open_at(now));
        super::shrink_after_burst(&mut self.published);
    }

    pub fn len(&self) -> usize {
        self.published.len()
    }

    pub fn is_empty(&self) -> bool {
        self.published.is_empty()
    }

    /// Pure: decides whether `event` about `regarding` at `now` is new or a repeat, and
    /// records it as published (a failed publish is recorded too: its repeat then patches
    /// a missing Event, fails again, and is logged; kube's Recorder does no better).
    pub fn decide(
        &mut self,
        event: &EventSpec<'_>,
        regarding: &ObjectReference,
        now: Timestamp,
    ) -> Publish {
        let key = same_event_key(event, regarding);
        match self.published.get_mut(&key) {
            Some(p) if p.open_at(now) => {
                p.count += 1;
                p.last = nanos(now);
                Publish::Extend {
                    namespace: namespace_of(regarding).to_string(),
                    name: event_name(regarding, p.first),
                    count: p.count,
                }
            }
            _ => {
                let published = Published {
                    first: nanos(now),
                    last: nanos(now),
                    count: 1,
                };
                self.published.insert(key, published);
                Publish::Create {
                    name: event_name(regarding, published.first),
                }
            }
        }
    }
}

/// Where an Event about `regarding` lives (cluster-scoped objects: `default`).
fn namespace_of(regarding: &ObjectReference) -> &str {
    regarding.namespace.as_deref().unwrap_or("default")
}

/// Sends what [`EventLog::decide`] decided.
pub async fn send(
    client: &kube::Client,
    controller: &str,
    instance: Option<&str>,
    event: &EventSpec<'_>,
    regarding: &ObjectReference,
    now: Timestamp,
    publish: Publish,
) -> Result<(), kube::Error> {
    match publish {
        Publish::Create { name } => {
            let body = K8sEvent {
                action: Some(event.action.to_string()),
                reason: Some(event.reason.to_string()),
                event_time: Some(MicroTime(now)),
                regarding: Some(regarding.clone()),
                note: Some(event.note.clone()),
                metadata: ObjectMeta {
                    namespace: Some(namespace_of(regarding).to_string()),
                    name: Some(name),
                    ..Default::default()
                },
                reporting_controller: Some(controller.to_string()),
                reporting_instance: Some(instance.unwrap_or(controller).to_string()),
                type_: Some(if event.warning { "Warning" } else { "Normal" }.into()),
                ..Default::default()
            };
            let api: Api<K8sEvent> = Api::namespaced(client.clone(), namespace_of(regarding));
            api.create(&PostParams::default(), &body).await?;
        }
        Publish::Extend {
            namespace,
            name,
            count,
        } => {
            let api: Api<K8sEvent> = Api::namespaced(client.clone(), &namespace);
            let series = json!({"series": {"count": count, "lastObservedTime": MicroTime(now)}});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(series))
                .await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn about(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("gpucloud.io/v1beta1".into()),
            kind: Some("NetworkVolume".into()),
            namespace: Some("ns".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            ..Default::default()
        }
    }

    fn spec(reason: &str) -> EventSpec<'_> {
        EventSpec {
            warning: true,
            reason,
            action: "Create",
            note: "refused".into(),
        }
    }

    #[test]
    fn a_repeat_within_the_window_extends_the_first_event() {
        let mut log = EventLog::default();
        let t0 = Timestamp::UNIX_EPOCH + SignedDuration::from_hours(1);
        let Publish::Create { name } = log.decide(&spec("Refused"), &about("a"), t0) else {
            panic!("the first is new");
        };
        assert!(name.starts_with("a."), "{name}");
        let later = t0 + SignedDuration::from_mins(5);
        assert_eq!(
            log.decide(&spec("Refused"), &about("a"), later),
            Publish::Extend {
                namespace: "ns".into(),
                name: name.clone(),
                count: 2
            }
        );
        // The window runs from the last repeat.
        let again = later + SignedDuration::from_mins(5);
        assert!(matches!(
            log.decide(&spec("Refused"), &about("a"), again),
            Publish::Extend { count: 3, .. }
        ));
    }

    #[test]
    fn other_reasons_objects_and_late_repeats_are_new_events() {
        let mut log = EventLog::default();
        let t0 = Timestamp::UNIX_EPOCH + SignedDuration::from_hours(1);
        log.decide(&spec("Refused"), &about("a"), t0);
        assert!(matches!(
            log.decide(&spec("Created"), &about("a"), t0),
            Publish::Create { .. }
        ));
        assert!(matches!(
            log.decide(&spec("Refused"), &about("b"), t0),
            Publish::Create { .. }
        ));
        let late = t0 + SERIES_WINDOW;
        assert!(matches!(
            log.decide(&spec("Refused"), &about("a"), late),
            Publish::Create { .. }
        ));
    }

    #[test]
    fn expiry_forgets_what_no_repeat_can_extend() {
        let mut log = EventLog::default();
        let t0 = Timestamp::UNIX_EPOCH + SignedDuration::from_hours(1);
        log.decide(&spec("Refused"), &about("a"), t0);
        log.decide(
            &spec("Refused"),
            &about("b"),
            t0 + SignedDuration::from_mins(3),
        );
        log.expire(t0 + SERIES_WINDOW);
        assert_eq!(log.len(), 1, "a is past its window, b is not");
        log.expire(t0 + SERIES_WINDOW + SignedDuration::from_mins(3));
        assert!(log.is_empty());
    }

    #[test]
    fn a_burst_gives_its_room_back_once_expired() {
        let mut log = EventLog::default();
        let t0 = Timestamp::UNIX_EPOCH + SignedDuration::from_hours(1);
        for i in 0..10_000 {
            log.decide(&spec("Created"), &about(&format!("nv-{i}")), t0);
        }
        let burst = log.published.capacity();
        log.decide(
            &spec("Created"),
            &about("late"),
            t0 + SignedDuration::from_mins(5),
        );
        log.expire(t0 + SERIES_WINDOW);
        assert_eq!(log.len(), 1);
        assert!(
            log.published.capacity() < burst / 16,
            "{} of {burst}",
            log.published.capacity()
        );
    }
}
