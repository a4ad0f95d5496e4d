//! The quota the platform publishes with every v2 answer, and what to do about it.
//!
//! `RateLimit: "minute";r=0;t=12, "hour";r=2800;t=1812` gives each window's remaining
//! calls `r` and seconds to its reset `t`; `RateLimit-Policy: "minute";q=60;w=60, ...` each
//! window's quota `q` and length `w`. Both are structured-field lists (RFC 8941): members
//! may come in any order, with unknown parameters and members, and with optional spaces.
//!
//! [`QuotaState`] keeps one key's windows and decides, before a call, whether it may go
//! now or must wait for a reset: calls are counted down locally so that concurrent calls
//! cannot together overshoot a window the last answer said was nearly spent.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

/// How far apart two readings of one window's reset may be (`t` is whole seconds).
const ROUNDING: Duration = Duration::from_secs(1);

/// Header names.
pub const RATE_LIMIT: &str = "ratelimit";
pub const RATE_LIMIT_POLICY: &str = "ratelimit-policy";

/// One window of `RateLimit`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowState {
    pub name: String,
    /// Calls left in the window.
    pub remaining: u64,
    /// Until the window resets.
    pub reset: Duration,
}

/// One window of `RateLimit-Policy`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowPolicy {
    pub name: String,
    /// Calls allowed per window.
    pub quota: u64,
    pub window: Duration,
}

/// A list member: its item (the window's name) and its integer parameters.
#[derive(Debug, Default, PartialEq)]
struct Member {
    name: String,
    params: Vec<(String, Option<u64>)>,
}

impl Member {
    fn param(&self, key: &str) -> Option<u64> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| *v)
    }
}

/// Splits a structured-field list into members, honouring quoted strings. Malformed
/// members are skipped rather than failing the whole header.
fn members(value: &str) -> Vec<Member> {
    split_outside_quotes(value, ',')
        .into_iter()
        .filter_map(|part| member(&part))
        .collect()
}

fn member(text: &str) -> Option<Member> {
    let mut pieces = split_outside_quotes(text.trim(), ';').into_iter();
    let item = pieces.next()?.trim().to_owned();
    let name = if let Some(inner) = item.strip_prefix('"') {
        inner
            .strip_suffix('"')?
            .replace("\\\"", "\"")
            .replace("\\\\", "\\")
    } else {
        item
    };
    if name.is_empty() {
        return None;
    }
    let params = pieces
        .map(|p| {
            let (k, v) = match p.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (p.trim(), None),
            };
            (
                k.to_ascii_lowercase(),
                v.and_then(|v| v.parse::<u64>().ok()),
            )
        })
        .collect();
    Some(Member { name, params })
}

/// Splits `text` at each `sep` outside quoted strings: list members at commas
/// (`"minute";r=0, "hour";r=2`), a member's parameters at semicolons (`item;a=1;b=2`).
/// A backslash inside quotes escapes the next character, so `"a\",b"` stays whole.
fn split_outside_quotes(text: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut in_quotes = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_quotes {
            current.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_quotes = false;
            }
        } else if c == '"' {
            in_quotes = true;
            current.push(c);
        } else if c == sep {
            out.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    out.push(current);
    out
}

/// Parses `RateLimit`; members without both `r` and `t` are left out.
pub fn parse_rate_limit(value: &str) -> Vec<WindowState> {
    members(value)
        .into_iter()
        .filter_map(|m| {
            Some(WindowState {
                remaining: m.param("r")?,
                reset: Duration::from_secs(m.param("t")?),
                name: m.name,
            })
        })
        .collect()
}

/// Parses `RateLimit-Policy`; members without `q` are left out (`w` defaults to unknown).
pub fn parse_rate_limit_policy(value: &str) -> Vec<WindowPolicy> {
    members(value)
        .into_iter()
        .filter_map(|m| {
            Some(WindowPolicy {
                quota: m.param("q")?,
                window: Duration::from_secs(m.param("w").unwrap_or(0)),
                name: m.name,
            })
        })
        .collect()
}

/// What one window is known to allow.
#[derive(Clone, Debug, PartialEq)]
struct Window {
    /// Calls this client may still start before the reset (may go negative while calls
    /// admitted earlier are still answered).
    remaining: i64,
    resets_at: Instant,
    /// From the policy: what the window allows again after its reset.
    quota: Option<u64>,
    length: Option<Duration>,
    /// The reset was reckoned from the policy after a rollover, not read: the next reading
    /// replaces it.
    estimated: bool,
}

/// Whether a call may start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Go now; the call has been counted.
    Go,
    /// Wait until then (the latest reset among the spent windows, or a 429's delay).
    WaitUntil(Instant),
    /// Wait for an answer in flight: nothing is known of this key's quota yet and its first
    /// call is out (a cold burst must not overshoot a quota nobody has read), or a window is
    /// spent whose reset is only reckoned from the policy and an answer will tell it.
    WaitForAnswer,
}

/// The quota windows of one API key, as the platform last described them.
#[derive(Clone, Debug, Default)]
pub struct QuotaState {
    windows: HashMap<String, Window>,
    /// Calls admitted and not yet answered.
    in_flight: u32,
    /// Set by a 429: nobody goes before.
    blocked_until: Option<Instant>,
    /// An answer has been seen (with or without quota headers).
    answered: bool,
}

impl QuotaState {
    /// Decides for a call about to start at `now`; `Go` counts it in every window.
    pub fn admit(&mut self, now: Instant) -> Admission {
        if let Some(until) = self.blocked_until {
            if until > now {
                return Admission::WaitUntil(until);
            }
            self.blocked_until = None;
        }
        if !self.answered && self.in_flight > 0 {
            return Admission::WaitForAnswer;
        }
        self.roll_over(now);
        let spent: Vec<&Window> = self.windows.values().filter(|w| w.remaining <= 0).collect();
        if !spent.is_empty() {
            // A reset reckoned from the policy is a guess; an answer on its way will say.
            if self.in_flight > 0 && spent.iter().any(|w| w.estimated) {
                return Admission::WaitForAnswer;
            }
            let until = spent.iter().map(|w| w.resets_at).max().unwrap_or(now);
            return Admission::WaitUntil(until);
        }
        for w in self.windows.values_mut() {
            w.remaining -= 1;
        }
        self.in_flight += 1;
        Admission::Go
    }

    /// A call admitted earlier has ended (answered or not).
    pub fn finish(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// Takes in an answer's headers, received at `now` (call [`QuotaState::finish`] first).
    /// The platform's count is the truth, less the calls still in flight, which it may not
    /// have counted yet. An older answer arriving late cannot raise a window's count.
    pub fn observe(&mut self, now: Instant, states: &[WindowState], policies: &[WindowPolicy]) {
        self.answered = true;
        let in_flight = i64::from(self.in_flight);
        for s in states {
            let policy = policies.iter().find(|p| p.name == s.name);
            let resets_at = now + s.reset;
            let remaining = i64::try_from(s.remaining).unwrap_or(i64::MAX) - in_flight;
            let quota = policy.map(|p| p.quota);
            let length = policy.map(|p| p.window).filter(|w| !w.is_zero());
            match self.windows.get_mut(&s.name) {
                // The same window (`t` is whole seconds, so its reset may seem to move by up
                // to one): an answer that raced another cannot raise the count or bring the
                // reset forward. Erring this way costs a little waiting, never a 429.
                Some(w)
                    if w.resets_at > now
                        && (w.estimated || resets_at <= w.resets_at + ROUNDING) =>
                {
                    w.remaining = w.remaining.min(remaining);
                    w.resets_at = if w.estimated {
                        resets_at
                    } else {
                        w.resets_at.max(resets_at)
                    };
                    w.estimated = false;
                    w.quota = quota.or(w.quota);
                    w.length = length.or(w.length);
                }
                _ => {
                    self.windows.insert(
                        s.name.clone(),
                        Window {
                            remaining,
                            resets_at,
                            quota,
                            length,
                            estimated: false,
                        },
                    );
                }
            }
        }
    }

    /// A 429: hold every call of this key for `delay`.
    pub fn block(&mut self, now: Instant, delay: Duration) {
        let until = now + delay;
        self.blocked_until = Some(self.blocked_until.map_or(until, |b| b.max(until)));
    }

    /// Nothing known and nothing in flight: the entry can be dropped.
    pub fn is_idle(&self, now: Instant) -> bool {
        self.in_flight == 0
            && self.blocked_until.is_none_or(|b| b <= now)
            && self.windows.values().all(|w| w.resets_at <= now)
    }

    /// Windows whose reset has passed start over: with their quota when the policy gave
    /// it (less what is in flight), else they are forgotten until the next answer.
    fn roll_over(&mut self, now: Instant) {
        let in_flight = i64::from(self.in_flight);
        self.windows.retain(|_, w| {
            if w.resets_at > now {
                return true;
            }
            match (w.quota, w.length) {
                (Some(q), Some(len)) => {
                    w.remaining = i64::try_from(q).unwrap_or(i64::MAX) - in_flight;
                    let behind = now.duration_since(w.resets_at);
                    let periods = behind.as_secs_f64() / len.as_secs_f64();
                    w.resets_at += len.mul_f64(periods.floor() + 1.0);
                    w.estimated = true;
                    true
                }
                _ => false,
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_headers_parse() {
        let s =
            parse_rate_limit(r#""minute";r=0;t=12, "hour";r=2800;t=1812, "day";r=49500;t=45012"#);
        assert_eq!(
            s,
            vec![
                WindowState {
                    name: "minute".into(),
                    remaining: 0,
                    reset: Duration::from_secs(12)
                },
                WindowState {
                    name: "hour".into(),
                    remaining: 2800,
                    reset: Duration::from_secs(1812)
                },
                WindowState {
                    name: "day".into(),
                    remaining: 49500,
                    reset: Duration::from_secs(45012)
                },
            ]
        );
        let p = parse_rate_limit_policy(
            r#""minute";q=60;w=60, "hour";q=3000;w=3600, "day";q=50000;w=86400"#,
        );
        assert_eq!(p.len(), 3);
        assert_eq!(
            p[0],
            WindowPolicy {
                name: "minute".into(),
                quota: 60,
                window: Duration::from_secs(60)
            }
        );
        assert_eq!(p[2].window, Duration::from_secs(86400));
    }

    #[test]
    fn parsing_tolerates_order_spacing_tokens_and_unknowns() {
        let s = parse_rate_limit(
            "  \"hour\" ; t=5 ;r=7;pk=:abc=:,minute;r=3;t=2,\"weird,name\";r=1;t=1, broken;r=x;t=1, \"nor\";t=4 , ,",
        );
        let names: Vec<&str> = s.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["hour", "minute", "weird,name"]);
        assert_eq!(s[0].remaining, 7);
        assert_eq!(s[0].reset, Duration::from_secs(5));
        assert!(parse_rate_limit("").is_empty());
        assert!(parse_rate_limit("\"unterminated;r=1;t=1").is_empty());
        let p = parse_rate_limit_policy("\"minute\";w=60;q=10;extra, \"x\";w=5");
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].quota, 10);
    }

    fn window(name: &str, remaining: u64, reset_s: u64) -> WindowState {
        WindowState {
            name: name.into(),
            remaining,
            reset: Duration::from_secs(reset_s),
        }
    }

    #[test]
    fn calls_go_until_a_window_is_spent_then_wait_for_its_reset() {
        let t0 = Instant::now();
        let mut q = QuotaState::default();
        assert_eq!(q.admit(t0), Admission::Go, "nothing known: go");
        q.finish();
        q.observe(
            t0,
            &[window("minute", 2, 10), window("hour", 100, 3000)],
            &[],
        );
        assert_eq!(q.admit(t0), Admission::Go);
        assert_eq!(q.admit(t0), Admission::Go);
        // Two calls in flight used the last two: the third waits for the minute's reset.
        assert_eq!(
            q.admit(t0),
            Admission::WaitUntil(t0 + Duration::from_secs(10))
        );
        // An answer says 1 left, but one call is still out: still nothing to spend.
        q.finish();
        q.observe(t0, &[window("minute", 1, 10)], &[]);
        assert!(matches!(q.admit(t0), Admission::WaitUntil(_)));
        // After the reset (no policy): forgotten, calls go again.
        let later = t0 + Duration::from_secs(11);
        assert_eq!(q.admit(later), Admission::Go);
    }

    #[test]
    fn answers_without_headers_let_calls_flow() {
        let t0 = Instant::now();
        let mut q = QuotaState::default();
        assert_eq!(q.admit(t0), Admission::Go);
        q.finish();
        // A failed first call taught nothing: the next one still goes alone.
        assert_eq!(q.admit(t0), Admission::Go);
        assert_eq!(q.admit(t0), Admission::WaitForAnswer);
        q.finish();
        q.observe(t0, &[], &[]);
        for _ in 0..100 {
            assert_eq!(q.admit(t0), Admission::Go);
        }
    }

    #[test]
    fn a_late_older_answer_cannot_raise_the_count() {
        let t0 = Instant::now();
        let mut q = QuotaState::default();
        q.observe(t0, &[window("minute", 0, 10)], &[]);
        q.observe(t0, &[window("minute", 5, 10)], &[]);
        assert!(matches!(q.admit(t0), Admission::WaitUntil(_)));
        // A reset that moved a whole window on is a new window, taken as said.
        q.observe(
            t0 + Duration::from_secs(11),
            &[window("minute", 5, 60)],
            &[],
        );
        assert_eq!(q.admit(t0 + Duration::from_secs(11)), Admission::Go);
    }

    #[test]
    fn with_a_policy_a_reset_window_starts_over_at_its_quota() {
        let t0 = Instant::now();
        let mut q = QuotaState::default();
        let policy = [WindowPolicy {
            name: "minute".into(),
            quota: 2,
            window: Duration::from_secs(60),
        }];
        q.observe(t0, &[window("minute", 0, 5)], &policy);
        let after = t0 + Duration::from_secs(6);
        assert_eq!(q.admit(after), Admission::Go);
        assert_eq!(q.admit(after), Admission::Go);
        // Spent again; the reset is reckoned, and the answers on their way will say.
        assert_eq!(q.admit(after), Admission::WaitForAnswer);
        q.finish();
        q.finish();
        // With nothing in flight the reckoning is the best there is.
        assert_eq!(
            q.admit(after),
            Admission::WaitUntil(t0 + Duration::from_secs(65))
        );
    }

    #[test]
    fn a_reading_replaces_a_reset_reckoned_from_the_policy() {
        let t0 = Instant::now();
        let mut q = QuotaState::default();
        let policy = [WindowPolicy {
            name: "minute".into(),
            quota: 3,
            window: Duration::from_secs(60),
        }];
        q.observe(t0, &[window("minute", 0, 1)], &policy);
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(q.admit(t1), Admission::Go);
        q.finish();
        // The platform says this window ends in 1 s, not in the 60 the policy suggested.
        q.observe(t1, &[window("minute", 0, 1)], &policy);
        assert_eq!(
            q.admit(t1),
            Admission::WaitUntil(t1 + Duration::from_secs(1))
        );
    }

    #[test]
    fn a_429_blocks_everyone_until_its_delay() {
        let t0 = Instant::now();
        let mut q = QuotaState::default();
        q.block(t0, Duration::from_secs(3));
        assert_eq!(
            q.admit(t0 + Duration::from_secs(1)),
            Admission::WaitUntil(t0 + Duration::from_secs(3))
        );
        assert!(!q.is_idle(t0));
        assert_eq!(q.admit(t0 + Duration::from_secs(3)), Admission::Go);
        q.finish();
        assert!(q.is_idle(t0 + Duration::from_secs(3)));
    }
}
