//! Pure window arithmetic of `Pod.spec.schedule`: from a weekly list of windows in a time
//! zone and an instant, whether a window is open and when that changes next.
//!
//! Nothing here reads a clock: the instant comes in as an argument, so every case (days,
//! midnight crossing, DST both ways, several windows) is a unit test.
//!
//! Rules, as docs/kinds/pod.md states them:
//! - A window belongs to the day it starts on: `Fri 22:00-02:00` runs from Friday 22:00
//!   to Saturday 02:00. A `to` at or before `from` crosses midnight; `to: "24:00"` is the
//!   end of the starting day; `from` equal to `to` is 24 hours.
//! - Local times are turned into instants with the time zone's rules of that day, with
//!   the "compatible" choice (RFC 5545, and what `jiff` does by default): a time that
//!   the spring-forward gap skips is taken as the instant it would have been one offset
//!   later (02:30 → 03:30 in Europe/Paris), a time the fall-back fold repeats is its first
//!   occurrence.
//! - Windows that overlap or touch are one open span: no transition between them.

use jiff::civil::{Date, DateTime, Time, Weekday};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};

/// One weekly window, parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// Days the window starts on; every day when empty.
    pub days: Vec<Weekday>,
    pub from: Time,
    /// `None`: the end of the starting day (`24:00`).
    pub to: Option<Time>,
}

/// A parsed schedule: windows in one time zone.
#[derive(Clone, Debug)]
pub struct Schedule {
    pub time_zone: TimeZone,
    pub windows: Vec<Window>,
}

/// Where an instant stands in a schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowState {
    pub open: bool,
    /// While open: when the open span began (used to tell whether a window opened after
    /// a guardrail stopped the pod). `None` when the schedule is always open.
    pub open_since: Option<Timestamp>,
    /// When `open` flips next; `None` when it never does (always open, or no window).
    pub next_transition: Option<Timestamp>,
}

/// Parses `HH:MM` (00:00 to 23:59); `24:00` too when `end_of_day` is allowed, as `None`.
pub fn parse_hhmm(text: &str, end_of_day: bool) -> Result<Option<Time>, String> {
    if end_of_day && text == "24:00" {
        return Ok(None);
    }
    let bad = || format!("{text:?} is not a time of day as HH:MM (00:00 to 23:59)");
    let (h, m) = text.split_once(':').ok_or_else(bad)?;
    if h.len() != 2 || m.len() != 2 {
        return Err(bad());
    }
    let h: i8 = h.parse().map_err(|_| bad())?;
    let m: i8 = m.parse().map_err(|_| bad())?;
    Time::new(h, m, 0, 0).map(Some).map_err(|_| bad())
}

/// A span of days around `now` wide enough to hold the open span containing `now` and the
/// next opening: every window is at most 24 hours long and repeats weekly.
const DAYS_BEFORE: i64 = 8;
const DAYS_AFTER: i64 = 8;
/// An open span this long covers the whole week: it never closes.
const WEEK: SignedDuration = SignedDuration::from_hours(7 * 24);

impl Schedule {
    /// The instant of a local date and time, by the rules above.
    fn instant(&self, date: Date, time: Time) -> Option<Timestamp> {
        let local = DateTime::from_parts(date, time);
        self.time_zone
            .to_ambiguous_timestamp(local)
            .compatible()
            .ok()
    }

    /// Every window occurrence starting on a day from `first` to `last`, as instants.
    fn occurrences(&self, first: Date, last: Date) -> Vec<(Timestamp, Timestamp)> {
        let mut spans = Vec::new();
        let mut day = first;
        while day <= last {
            for w in &self.windows {
                if !w.days.is_empty() && !w.days.contains(&day.weekday()) {
                    continue;
                }
                let Ok(next_day) = day.tomorrow() else {
                    continue;
                };
                let (end_day, end_time) = match w.to {
                    Some(to) if to > w.from => (day, to),
                    Some(to) => (next_day, to),
                    None => (next_day, Time::midnight()),
                };
                if let (Some(start), Some(end)) =
                    (self.instant(day, w.from), self.instant(end_day, end_time))
                    && start < end
                {
                    spans.push((start, end));
                }
            }
            match day.tomorrow() {
                Ok(d) => day = d,
                Err(_) => break,
            }
        }
        spans
    }

    /// Pure: the state of the schedule at `now`.
    pub fn state_at(&self, now: Timestamp) -> WindowState {
        let today = now.to_zoned(self.time_zone.clone()).date();
        let shift = |days: i64| today.checked_add(jiff::Span::new().days(days)).ok();
        let (Some(first), Some(last)) = (shift(-DAYS_BEFORE), shift(DAYS_AFTER)) else {
            return WindowState {
                open: false,
                open_since: None,
                next_transition: None,
            };
        };
        let mut spans = self.occurrences(first, last);
        spans.sort();
        // Merge overlapping and touching spans: no transition between them.
        let mut merged: Vec<(Timestamp, Timestamp)> = Vec::new();
        for (start, end) in spans {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        if let Some(&(start, end)) = merged.iter().find(|(s, e)| *s <= now && now < *e) {
            let always = end.duration_since(start) >= WEEK;
            return WindowState {
                open: true,
                open_since: (!always).then_some(start),
                next_transition: (!always).then_some(end),
            };
        }
        WindowState {
            open: false,
            open_since: None,
            next_transition: merged.iter().map(|(s, _)| *s).find(|s| *s > now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Weekday::{
        Friday as Fri, Monday as Mon, Saturday as Sat, Sunday as Sun, Thursday as Thu,
        Tuesday as Tue, Wednesday as Wed,
    };

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn hhmm(text: &str) -> Option<Time> {
        parse_hhmm(text, true).unwrap()
    }

    fn window(days: &[Weekday], from: &str, to: &str) -> Window {
        Window {
            days: days.to_vec(),
            from: hhmm(from).unwrap(),
            to: hhmm(to),
        }
    }

    fn schedule(tz: &str, windows: Vec<Window>) -> Schedule {
        Schedule {
            time_zone: TimeZone::get(tz).unwrap(),
            windows,
        }
    }

    fn open_until(s: &Schedule, now: &str, until: &str) {
        let st = s.state_at(at(now));
        assert!(st.open, "{now}: {st:?}");
        assert_eq!(st.next_transition, Some(at(until)), "{now}");
    }

    fn closed_until(s: &Schedule, now: &str, until: &str) {
        let st = s.state_at(at(now));
        assert!(!st.open, "{now}: {st:?}");
        assert_eq!(st.next_transition, Some(at(until)), "{now}");
    }

    fn office(tz: &str) -> Schedule {
        schedule(
            tz,
            vec![window(&[Mon, Tue, Wed, Thu, Fri], "08:00", "19:00")],
        )
    }

    #[test]
    fn times_of_day_parse_strictly() {
        assert_eq!(
            parse_hhmm("08:30", false).unwrap(),
            Some(Time::constant(8, 30, 0, 0))
        );
        assert_eq!(parse_hhmm("24:00", true).unwrap(), None);
        for bad in ["24:00", "8:30", "08:60", "25:00", "0830", "08:3x", ""] {
            assert!(parse_hhmm(bad, false).is_err(), "{bad}");
        }
    }

    #[test]
    fn weekdays_in_paris_winter() {
        let s = office("Europe/Paris");
        // 2026-01-14 is a Wednesday; Paris is UTC+1 in winter.
        open_until(&s, "2026-01-14T09:00:00Z", "2026-01-14T18:00:00Z");
        closed_until(&s, "2026-01-14T06:59:59Z", "2026-01-14T07:00:00Z");
        // The boundary instants themselves: open at `from`, closed at `to`.
        open_until(&s, "2026-01-14T07:00:00Z", "2026-01-14T18:00:00Z");
        closed_until(&s, "2026-01-14T18:00:00Z", "2026-01-15T07:00:00Z");
        // Friday evening: closed over the weekend until Monday 08:00 local.
        closed_until(&s, "2026-01-16T19:00:00Z", "2026-01-19T07:00:00Z");
        closed_until(&s, "2026-01-18T12:00:00Z", "2026-01-19T07:00:00Z");
    }

    #[test]
    fn a_window_crossing_midnight_belongs_to_the_day_it_starts() {
        let s = schedule("UTC", vec![window(&[Fri], "22:00", "02:00")]);
        // 2026-01-16 is a Friday.
        open_until(&s, "2026-01-17T01:00:00Z", "2026-01-17T02:00:00Z");
        open_until(&s, "2026-01-16T23:59:00Z", "2026-01-17T02:00:00Z");
        // Saturday 22:00 is not in the window: Saturday is not listed.
        closed_until(&s, "2026-01-17T23:00:00Z", "2026-01-23T22:00:00Z");
        // Thursday night closed too (the window of Thursday does not exist).
        closed_until(&s, "2026-01-16T01:00:00Z", "2026-01-16T22:00:00Z");
    }

    #[test]
    fn end_of_day_and_whole_days() {
        let s = schedule("UTC", vec![window(&[Sat, Sun], "00:00", "24:00")]);
        // Saturday and Sunday are one open span: no transition at Sunday midnight.
        open_until(&s, "2026-01-17T10:00:00Z", "2026-01-19T00:00:00Z");
        closed_until(&s, "2026-01-19T00:00:00Z", "2026-01-24T00:00:00Z");
        let equal = schedule("UTC", vec![window(&[Mon], "12:00", "12:00")]);
        open_until(&equal, "2026-01-19T13:00:00Z", "2026-01-20T12:00:00Z");
    }

    #[test]
    fn every_day_all_day_never_closes() {
        let s = schedule("Europe/Paris", vec![window(&[], "00:00", "24:00")]);
        let st = s.state_at(at("2026-03-29T01:30:00Z"));
        assert!(st.open);
        assert_eq!(st.next_transition, None);
        assert_eq!(st.open_since, None);
        let none = schedule("UTC", vec![]);
        let st = none.state_at(at("2026-03-29T01:30:00Z"));
        assert!(!st.open && st.next_transition.is_none());
    }

    #[test]
    fn spring_forward_shortens_a_night_window_and_moves_a_start_in_the_gap() {
        // Europe/Paris: 2026-03-29 02:00 CET becomes 03:00 CEST.
        let s = schedule("Europe/Paris", vec![window(&[], "01:00", "05:00")]);
        closed_until(&s, "2026-03-28T23:30:00Z", "2026-03-29T00:00:00Z");
        // 01:00 CET = 00:00Z, 05:00 CEST = 03:00Z: three hours that night.
        open_until(&s, "2026-03-29T00:30:00Z", "2026-03-29T03:00:00Z");
        // The next night is back to four hours, in summer time.
        closed_until(&s, "2026-03-29T03:00:00Z", "2026-03-29T23:00:00Z");
        open_until(&s, "2026-03-29T23:00:00Z", "2026-03-30T03:00:00Z");
        // 02:30 does not exist that night: the window starts at 03:30 CEST (01:30Z).
        let gap = schedule("Europe/Paris", vec![window(&[Sun], "02:30", "06:00")]);
        closed_until(&gap, "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z");
        open_until(&gap, "2026-03-29T01:30:00Z", "2026-03-29T04:00:00Z");
    }

    #[test]
    fn fall_back_lengthens_a_night_window_and_takes_the_first_repeated_time() {
        // Europe/Paris: 2026-10-25 03:00 CEST becomes 02:00 CET.
        let s = schedule("Europe/Paris", vec![window(&[Sat], "22:00", "06:00")]);
        // 22:00 CEST = 20:00Z on Saturday; 06:00 CET = 05:00Z on Sunday: nine hours.
        closed_until(&s, "2026-10-24T19:59:00Z", "2026-10-24T20:00:00Z");
        open_until(&s, "2026-10-25T04:30:00Z", "2026-10-25T05:00:00Z");
        // 02:30 happens twice that night: the first one (CEST, 00:30Z) opens the window.
        let fold = schedule("Europe/Paris", vec![window(&[Sun], "02:30", "04:00")]);
        closed_until(&fold, "2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z");
        open_until(&fold, "2026-10-25T00:30:00Z", "2026-10-25T03:00:00Z");
        // Same rules on the other side of the Atlantic (New York: 2026-11-01 02:00 EDT
        // becomes 01:00 EST).
        let ny = office("America/New_York");
        // Friday 2026-10-30 19:00 EDT = 23:00Z; Monday 2026-11-02 08:00 EST = 13:00Z.
        closed_until(&ny, "2026-10-30T23:00:00Z", "2026-11-02T13:00:00Z");
    }

    #[test]
    fn several_windows() {
        let s = schedule(
            "UTC",
            vec![
                window(&[Mon], "08:00", "12:00"),
                window(&[Mon], "13:00", "17:00"),
                window(&[Tue], "10:00", "11:00"),
            ],
        );
        // 2026-01-19 is a Monday.
        open_until(&s, "2026-01-19T09:00:00Z", "2026-01-19T12:00:00Z");
        closed_until(&s, "2026-01-19T12:30:00Z", "2026-01-19T13:00:00Z");
        closed_until(&s, "2026-01-19T17:00:00Z", "2026-01-20T10:00:00Z");
        let st = s.state_at(at("2026-01-19T14:00:00Z"));
        assert_eq!(st.open_since, Some(at("2026-01-19T13:00:00Z")));
        // Overlapping and touching windows are one span.
        let joined = schedule(
            "UTC",
            vec![
                window(&[Mon], "08:00", "12:00"),
                window(&[Mon], "11:00", "14:00"),
                window(&[Mon], "14:00", "15:00"),
            ],
        );
        open_until(&joined, "2026-01-19T09:00:00Z", "2026-01-19T15:00:00Z");
        let st = joined.state_at(at("2026-01-19T14:30:00Z"));
        assert_eq!(st.open_since, Some(at("2026-01-19T08:00:00Z")));
        // A night window running into a morning window of the next day.
        let chained = schedule(
            "UTC",
            vec![
                window(&[Mon], "22:00", "00:00"),
                window(&[Tue], "00:00", "06:00"),
            ],
        );
        open_until(&chained, "2026-01-19T23:00:00Z", "2026-01-20T06:00:00Z");
    }
}
