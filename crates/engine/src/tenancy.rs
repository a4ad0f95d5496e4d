//! Who holds a remote object, so that one namespace can never take another's: an object
//! adopts (by the `gpucloud.io/external-id` annotation, by name after an interrupted
//! create, or only observes under `ObserveOnly`) a remote object only when that remote
//! object is free, and deletes only what it holds.
//!
//! A remote object is held by the live object its marker names (see [`crate::marker`]: a
//! pod's UID env, the UID prefix of an operator-given name), whatever its namespace or
//! install; a marker whose object no longer exists (deleted with `deletionPolicy: Orphan`)
//! holds nothing. A remote object with no marker (a name the spec chose, one made outside
//! the operator) is held by the first object that recorded it: its id in status, or, for a
//! pass still under way, this process's claims table. Everything here is pure; the engine
//! gathers the facts (`engine/holders.rs`).

use crate::failure::Failure;
use crate::marker::Marker;

/// The reason of the condition and Event of a refused adoption.
pub const ADOPTION_REFUSED: &str = "AdoptionRefused";

/// Who holds a remote object, from one object's point of view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Holder {
    /// The object itself: its marker, or its recorded claim.
    Mine,
    /// Nobody: the object may take it.
    Free,
    /// Another live object, `namespace/name`.
    Other(String),
    /// Another object that this install cannot see (a namespace it does not watch, or
    /// objects its selector leaves out), known only by its UID.
    Unseen(String),
}

impl Holder {
    /// Whether the object may act on the remote object (adopt, change or delete it).
    pub fn allows(&self) -> bool {
        matches!(self, Holder::Mine | Holder::Free)
    }
}

/// Pure: whether `marker` names the object whose UID is `uid`.
pub fn names_uid(marker: &Marker, uid: &str) -> bool {
    match marker {
        Marker::Uid(marked) => marked == uid,
        Marker::UidPrefix(prefix) => {
            let hex: String = uid.chars().filter(|c| *c != '-').take(8).collect();
            !prefix.is_empty() && hex.eq_ignore_ascii_case(prefix)
        }
    }
}

/// What is known of the object a foreign marker names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MarkedOwner {
    /// Found alive among the objects this install watches.
    Alive(String),
    /// Gone: its remote object is in the released record, or this install watches every
    /// object of the kind and none has that UID.
    Gone,
    /// Not found, and this install cannot see every object of the kind: not proven gone.
    Unknown,
}

/// Pure: what the object of a foreign marker is, from where it was looked for.
pub fn marked_owner(found: Option<String>, released: bool, sees_every_object: bool) -> MarkedOwner {
    match found {
        Some(key) => MarkedOwner::Alive(key),
        None if released || sees_every_object => MarkedOwner::Gone,
        None => MarkedOwner::Unknown,
    }
}

/// The facts about one remote object, as the engine gathered them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HolderFacts<'a> {
    /// The UID of the object asking.
    pub uid: &'a str,
    /// The remote object's marker, if it carries one.
    pub marker: Option<&'a Marker>,
    /// What is known of the marker's object, when the marker is not this object's.
    pub marked_owner: MarkedOwner,
    /// The id this object's status records (what it created or adopted before).
    pub recorded_id: Option<&'a str>,
    /// The remote object's id.
    pub id: &'a str,
    /// Another live object that recorded this id first (its status, or a claim this
    /// process took for it), `namespace/name`.
    pub claimed_by: Option<&'a str>,
}

/// Pure: who holds the remote object. The marker decides first: it is written with the
/// remote object and names one object for good. Without one (or with a marker whose
/// object is gone), the first object to record the id holds it.
pub fn holder(f: &HolderFacts<'_>) -> Holder {
    if let Some(marker) = f.marker {
        if names_uid(marker, f.uid) {
            return Holder::Mine;
        }
        match &f.marked_owner {
            MarkedOwner::Alive(key) => return Holder::Other(key.clone()),
            MarkedOwner::Unknown => return Holder::Unseen(marker.uid().to_string()),
            MarkedOwner::Gone => {}
        }
    }
    match f.claimed_by {
        Some(other) => Holder::Other(other.to_string()),
        None if f.recorded_id == Some(f.id) => Holder::Mine,
        None => Holder::Free,
    }
}

/// Pure: the failure that reports a refused adoption of `noun` `id`: Stalled (a person must
/// act: point the annotation elsewhere, or delete the other object), naming the holder.
pub fn adoption_refused(noun: &str, id: &str, holder: &Holder) -> Failure {
    let by = match holder {
        Holder::Other(key) => format!("held by {key}"),
        Holder::Unseen(uid) => {
            format!("held by the object with UID {uid}, which this install does not watch")
        }
        Holder::Mine | Holder::Free => "free".to_string(),
    };
    Failure::permanent(
        ADOPTION_REFUSED,
        format!(
            "{noun} {id} is {by}: an object adopts only a {noun} no other object holds; \
             nothing was written to it, and deleting this object leaves it alone"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "1b4e28ba-2fa1-11d2-883f-0016d3cca427";
    const OTHER: &str = "9f3a1c2e-0000-4000-8000-000000000000";

    fn facts<'a>(marker: Option<&'a Marker>) -> HolderFacts<'a> {
        HolderFacts {
            uid: UID,
            marker,
            marked_owner: MarkedOwner::Unknown,
            recorded_id: None,
            id: "pod-1",
            claimed_by: None,
        }
    }

    #[test]
    fn a_marker_names_a_whole_uid_or_its_first_eight_hex_digits() {
        assert!(names_uid(&Marker::Uid(UID.into()), UID));
        assert!(names_uid(&Marker::UidPrefix("1b4e28ba".into()), UID));
        assert!(!names_uid(&Marker::UidPrefix("1b4e28bb".into()), UID));
        assert!(!names_uid(&Marker::Uid(OTHER.into()), UID));
        assert!(!names_uid(&Marker::UidPrefix(String::new()), UID));
    }

    #[test]
    fn an_objects_own_marker_is_its_own_whatever_else_holds() {
        let mine = Marker::Uid(UID.into());
        let f = HolderFacts {
            claimed_by: Some("b/thief"),
            ..facts(Some(&mine))
        };
        assert_eq!(holder(&f), Holder::Mine);
    }

    #[test]
    fn a_remote_object_marked_by_another_live_object_is_theirs_in_any_namespace() {
        let theirs = Marker::Uid(OTHER.into());
        let f = HolderFacts {
            marked_owner: MarkedOwner::Alive("a/trainer".into()),
            // Even an object that recorded the id (an adoption before this check existed).
            recorded_id: Some("pod-1"),
            ..facts(Some(&theirs))
        };
        assert_eq!(holder(&f), Holder::Other("a/trainer".into()));
        assert!(!holder(&f).allows());
    }

    #[test]
    fn a_marker_not_proven_gone_holds_the_remote_object() {
        let theirs = Marker::UidPrefix("9f3a1c2e".into());
        assert_eq!(
            holder(&facts(Some(&theirs))),
            Holder::Unseen("9f3a1c2e".into())
        );
    }

    #[test]
    fn a_marker_whose_object_is_gone_holds_nothing() {
        let theirs = Marker::Uid(OTHER.into());
        let f = HolderFacts {
            marked_owner: MarkedOwner::Gone,
            ..facts(Some(&theirs))
        };
        assert_eq!(holder(&f), Holder::Free);
        // ...but the first object to take it then holds it.
        let taken = HolderFacts {
            claimed_by: Some("c/first"),
            ..f.clone()
        };
        assert_eq!(holder(&taken), Holder::Other("c/first".into()));
        let recorded = HolderFacts {
            recorded_id: Some("pod-1"),
            ..f
        };
        assert_eq!(holder(&recorded), Holder::Mine);
    }

    #[test]
    fn an_unmarked_remote_object_is_held_by_the_first_to_record_it() {
        assert_eq!(holder(&facts(None)), Holder::Free);
        let first = HolderFacts {
            claimed_by: Some("b/first"),
            ..facts(None)
        };
        assert_eq!(holder(&first), Holder::Other("b/first".into()));
        let own = HolderFacts {
            recorded_id: Some("pod-1"),
            ..facts(None)
        };
        assert_eq!(holder(&own), Holder::Mine);
        // A recorded id of another remote object is no claim on this one.
        let elsewhere = HolderFacts {
            recorded_id: Some("pod-2"),
            ..facts(None)
        };
        assert_eq!(holder(&elsewhere), Holder::Free);
    }

    #[test]
    fn where_a_foreign_markers_object_was_looked_for_decides_whether_it_is_gone() {
        assert_eq!(
            marked_owner(Some("a/x".into()), true, true),
            MarkedOwner::Alive("a/x".into())
        );
        assert_eq!(marked_owner(None, true, false), MarkedOwner::Gone);
        assert_eq!(marked_owner(None, false, true), MarkedOwner::Gone);
        assert_eq!(marked_owner(None, false, false), MarkedOwner::Unknown);
    }

    #[test]
    fn a_refusal_is_stalled_and_names_the_holder() {
        let f = adoption_refused("pod", "pod-1", &Holder::Other("a/trainer".into()));
        assert!(f.is_permanent());
        assert_eq!(f.reason, ADOPTION_REFUSED);
        assert!(
            f.message.contains("pod pod-1 is held by a/trainer"),
            "{}",
            f.message
        );
        let unseen = adoption_refused("pod", "pod-1", &Holder::Unseen(OTHER.into()));
        assert!(unseen.message.contains(OTHER), "{}", unseen.message);
    }
}
