//! Unit tests of the REST v2 billing windows: buckets aligned in UTC, windows snapped,
//! clamped or refused, which usage overlaps a bucket, and rows only where there is usage.

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
    // Already on a boundary: not widened.
    let w = resolve_window(
        now,
        BucketSize::Day,
        Some(t("2026-06-10T00:00:00Z")),
        Some(t("2026-06-12T00:00:00Z")),
        None,
    )
    .unwrap();
    assert_eq!(w.end(), t("2026-06-12T00:00:00Z"));
    let last = resolve_window(now, BucketSize::Hour, None, None, Some(3)).unwrap();
    assert_eq!(last.start(), t("2026-06-17T11:00:00Z"));
    assert_eq!(last.end(), t("2026-06-17T14:00:00Z"));
    let default = resolve_window(now, BucketSize::Day, None, None, None).unwrap();
    assert_eq!(default.start(), t("2026-05-18T00:00:00Z"));
    assert_eq!(default.end(), t("2026-06-18T00:00:00Z"));
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
}

/// The document bounds neither `lastN` nor a window's length: any is answered, clamped to
/// what RFC 3339 writes (years 0001..9999, as far as the date library reaches), and no step
/// overflows the date library.
#[test]
fn any_window_is_answered_within_rfc3339() {
    let now = t("2026-06-17T13:45:10Z");
    let long = resolve_window(
        now,
        BucketSize::Hour,
        Some(t("2020-01-01T00:00:00Z")),
        None,
        None,
    )
    .unwrap();
    assert_eq!(long.start(), t("2020-01-01T00:00:00Z"));
    let thousand = resolve_window(now, BucketSize::Day, None, None, Some(1001)).unwrap();
    assert_eq!(thousand.start(), t("2023-09-21T00:00:00Z"));
    for bucket in [
        BucketSize::Hour,
        BucketSize::Day,
        BucketSize::Week,
        BucketSize::Month,
        BucketSize::Year,
    ] {
        for n in [100_000_000, u64::from(u32::MAX), i64::MAX as u64, u64::MAX] {
            let w = resolve_window(now, bucket, None, None, Some(n)).unwrap();
            assert_eq!(w.start(), RFC3339_MIN, "{bucket:?} {n}");
            assert_eq!(w.end(), bucket.next(bucket.floor(now)));
        }
        let all = resolve_window(
            now,
            bucket,
            Some(t("0001-01-01T00:00:00Z")),
            Some(t("9999-12-30T22:00:00Z")),
            None,
        )
        .unwrap();
        assert_eq!((all.start(), all.end()), (RFC3339_MIN, RFC3339_MAX));
        assert_eq!(rfc3339_secs(all.end()), "9999-12-30T22:00:00Z");
        assert_eq!(all.bucket_end(bucket.floor(RFC3339_MAX)), RFC3339_MAX);
    }
    assert_eq!(rfc3339_secs(RFC3339_MIN), "0001-01-01T00:00:00Z");
    assert_eq!(BucketSize::Week.floor(RFC3339_MIN), RFC3339_MIN);
}

/// A window of every hour from year 1 to year 9999 (some 88 million) lists only the hours
/// that had usage, and builds them from the usage: two stretches, three rows.
#[test]
fn rows_are_only_the_buckets_with_usage() {
    let clock = Clock::new(1.0);
    let w = resolve_window(
        clock.wall(),
        BucketSize::Hour,
        Some(RFC3339_MIN),
        Some(RFC3339_MAX),
        None,
    )
    .unwrap();
    // Half past the first whole hour of the clock, for an hour; and an empty stretch then.
    let start = BucketSize::Hour.next(BucketSize::Hour.floor(clock.wall()));
    let a = (clock.emulated_at(start) + 1_800_000) as u64;
    let stretches = [("a", a, a + 3_600_000), ("b", a, a)];
    let rows = bucket_records(
        &clock,
        &w,
        None,
        stretches.iter(),
        |s| (s.0, s.1, s.2),
        |_, h| PodAmounts {
            gpu: h,
            ..PodAmounts::default()
        },
    );
    let got: Vec<(&str, Timestamp, f64)> = rows
        .iter()
        .map(|(id, s, x)| (id.as_str(), *s, x.gpu))
        .collect();
    let next = BucketSize::Hour.next(start);
    assert_eq!(
        got,
        [("a", start, 0.5), ("b", start, 0.0), ("a", next, 0.5)],
        "{rows:?}"
    );
}

#[test]
fn overlaps() {
    assert_eq!(overlap_hours(0, 7_200_000, 3_600_000, 10_800_000), 1.0);
    assert_eq!(overlap_hours(0, 1000, 5000, 6000), 0.0);
    assert!(touches(0, 1000, 500, 6000));
    assert!(!touches(0, 1000, 1000, 6000));
}
