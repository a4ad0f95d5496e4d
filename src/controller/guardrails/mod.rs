//! Cost guardrails of a Pod (issue #16): `spec.schedule`, `spec.maxRuntime` and
//! `spec.idleStop` decide whether a pod whose spec says Running is held stopped.
//!
//! - [`schedule`]: pure window arithmetic (time zones and DST through `jiff`'s bundled tz
//!   database).

pub mod schedule;
