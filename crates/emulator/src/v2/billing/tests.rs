//! Unit tests of the REST v2 billing windows: buckets aligned in UTC, windows snapped or
//! refused, and which usage overlaps a bucket.

use super::*;

fn t(s: &str) -> Timestamp {
    s.parse().unwrap()
}

#[test]
fn buckets_align_in_utc() {
    let x = t("2026-06-17T13:45:10Z"); // a Wednesday
    assert_eq!(BucketSize::Hour.floor(x), t("2026-06-17T13:00:00Z"));
    assert_eq!(BucketSize::Day.floor(x), t("2026-06-17T00:00:00Z"));
    assert_eq!(BucketSize::Week.floor(x), t("2026-06-15T00:00:00Z"));
    assert_eq!(BucketSize::Month.floor(x), t("2026-06-01T00:00:00Z"));
    assert_eq!(BucketSize::Year.floor(x), t("2026-01-01T00:00:00Z"));
    assert_eq!(
        BucketSize::Month.next(t("2026-01-01T00:00:00Z")),
        t("2026-02-01T00:00:00Z")
    );
}

#[test]
fn windows_snap_and_refuse_nonsense() {
    let now = t("2026-06-17T13:45:10Z");
    let w = resolve_window(
        now,
        BucketSize::Day,
        Some(t("2026-06-10T08:00:00Z")),
        Some(t("2026-06-12T01:00:00Z")),
        None,
    )
    .unwrap();
    assert_eq!(w.start(), t("2026-06-10T00:00:00Z"));
    assert_eq!(w.end(), t("2026-06-13T00:00:00Z"));
    assert_eq!(w.bounds.len(), 4);
    // Already on a boundary: not widened.
    let w = resolve_window(
        now,
        BucketSize::Day,
        Some(t("2026-06-10T00:00:00Z")),
        Some(t("2026-06-12T00:00:00Z")),
        None,
    )
    .unwrap();
    assert_eq!(w.bounds.len(), 3);
    let last = resolve_window(now, BucketSize::Hour, None, None, Some(3)).unwrap();
    assert_eq!(last.start(), t("2026-06-17T11:00:00Z"));
    assert_eq!(last.end(), t("2026-06-17T14:00:00Z"));
    let default = resolve_window(now, BucketSize::Day, None, None, None).unwrap();
    assert_eq!(default.bounds.len(), 32);
    let both = resolve_window(now, BucketSize::Day, Some(now), None, Some(2)).unwrap_err();
    assert_eq!(both.status.as_u16(), 400);
    let backwards = resolve_window(
        now,
        BucketSize::Day,
        Some(now),
        Some(t("2026-01-01T00:00:00Z")),
        None,
    )
    .unwrap_err();
    assert_eq!(backwards.status.as_u16(), 400);
    let huge = resolve_window(
        now,
        BucketSize::Hour,
        Some(t("2020-01-01T00:00:00Z")),
        None,
        None,
    )
    .unwrap_err();
    assert_eq!(huge.status.as_u16(), 400);
}

#[test]
fn overlaps() {
    assert_eq!(overlap_hours(0, 7_200_000, 3_600_000, 10_800_000), 1.0);
    assert_eq!(overlap_hours(0, 1000, 5000, 6000), 0.0);
    assert!(touches(0, 1000, 500, 6000));
    assert!(!touches(0, 1000, 1000, 6000));
}
