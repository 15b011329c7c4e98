//! Wall-clock reconstruction (formats.md §2.8, design.md §2 fix 3).
//!
//! Every time in `timing.json` is on the host's monotonic clock; the only
//! wall-clock anchor is `timestamp`, taken just after the root end. So
//! `wall(m) = T_end − (M_end − m)` with `M_end = start_s + total_elapsed_s`.
//! All arithmetic is in integer nanoseconds: each file value is rounded to
//! the nanosecond once, then only added and subtracted exactly, so the 6
//! decimals of the file survive (f64 seconds near 1.8·10⁹ would not).

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::model::{Build, Event};

/// 2000-01-01T00:00:00Z: no span may start before it (design.md §2 fix 3).
pub(crate) const Y2000_UNIX_NS: i64 = 946_684_800_000_000_000;
const NS_PER_S: i64 = 1_000_000_000;

/// Parses the `timestamp` field: RFC 3339 / ISO-8601 with a zone offset
/// (`+00:00` as written, `Z` and other offsets accepted), fraction optional.
/// Returns Unix nanoseconds.
pub fn parse_timestamp(s: &str) -> Option<i64> {
    let t = OffsetDateTime::parse(s.trim(), &Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos()).ok()
}

/// Seconds of the file to integer nanoseconds. Saturates instead of
/// overflowing on absurd values (`as` does), which the anchoring window and
/// the year-2000 floor then reject.
pub fn secs_to_ns(s: f64) -> i64 {
    (s * 1e9).round() as i64
}

/// A rule's interval on the build's monotonic clock, ns (the build
/// analytics' and the compile history's measure of a rule).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Interval {
    pub start: i64,
    /// Never before `start`.
    pub end: i64,
}

impl Interval {
    /// `[start, end)`; an end before the start is taken as the start.
    pub fn new(start: i64, end: i64) -> Self {
        Self {
            start,
            end: end.max(start),
        }
    }

    pub fn duration_ns(self) -> i64 {
        self.end.saturating_sub(self.start)
    }

    /// Zero length: the rule took less than the clock's resolution.
    pub fn is_instant(self) -> bool {
        self.end == self.start
    }

    /// The interval of an event, as its span shows it.
    pub fn of(event: &Event) -> Self {
        Self::new(secs_to_ns(event.start()), secs_to_ns(event.end()))
    }
}

/// Why a build's times cannot be placed on the wall clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClockError {
    MissingTimestamp,
    UnparseableTimestamp(String),
    /// The timestamp or the derived build start is before 2000.
    Before2000(&'static str),
    /// `total_elapsed_s` < 0: the root would end before it starts.
    NegativeDuration,
}

impl std::fmt::Display for ClockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClockError::MissingTimestamp => {
                f.write_str("no string `timestamp`: the build cannot be placed in time")
            }
            ClockError::UnparseableTimestamp(s) => {
                write!(f, "`timestamp` {s:?} is not an ISO-8601 time with offset")
            }
            ClockError::Before2000(what) => write!(f, "{what} is before the year 2000"),
            ClockError::NegativeDuration => f.write_str("`total_elapsed_s` is negative"),
        }
    }
}

/// Maps the monotonic times of one build to Unix nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    /// `T_end − M_end`, added to a monotonic instant to get wall time.
    offset_ns: i128,
    root_start_ns: i64,
    root_end_ns: i64,
}

impl Clock {
    pub fn for_build(build: &Build) -> Result<Self, ClockError> {
        let ts = build.timestamp.as_deref().ok_or(ClockError::MissingTimestamp)?;
        let t_end = parse_timestamp(ts).ok_or_else(|| ClockError::UnparseableTimestamp(ts.to_owned()))?;
        if t_end < Y2000_UNIX_NS {
            return Err(ClockError::Before2000("`timestamp`"));
        }
        if build.total_elapsed() < 0.0 {
            return Err(ClockError::NegativeDuration);
        }
        let root_start_ns = secs_to_ns(build.root_start_s());
        let root_end_ns = root_start_ns.saturating_add(secs_to_ns(build.total_elapsed()));
        let clock = Clock {
            offset_ns: i128::from(t_end) - i128::from(root_end_ns),
            root_start_ns,
            root_end_ns,
        };
        if clock.wall(root_start_ns) < Y2000_UNIX_NS {
            return Err(ClockError::Before2000(
                "the build start (timestamp − total_elapsed_s)",
            ));
        }
        Ok(clock)
    }

    /// Wall time (Unix ns) of a monotonic instant in ns, clamped to the
    /// representable range.
    pub fn wall(&self, mono_ns: i64) -> i64 {
        let t = self.offset_ns + i128::from(mono_ns);
        i64::try_from(t).unwrap_or(if t < 0 { i64::MIN } else { i64::MAX })
    }

    /// Root span interval in Unix ns; its end is `T_end` exactly.
    pub fn root_interval(&self) -> (i64, i64) {
        (self.wall(self.root_start_ns), self.wall(self.root_end_ns))
    }

    /// Whether a rule can be placed: its start is not the 0.0 "never
    /// started" sentinel and its interval lies within one second of the root
    /// (formats.md §2.9; make's own failure value is a large negative start).
    pub fn is_anchored(&self, rule: &Event) -> bool {
        if rule.start() == 0.0 {
            return false;
        }
        let lo = self.root_start_ns.saturating_sub(NS_PER_S);
        let hi = self.root_end_ns.saturating_add(NS_PER_S);
        let (start, end) = (secs_to_ns(rule.start()), secs_to_ns(rule.end()));
        lo <= start && start <= hi && lo <= end && end <= hi
    }

    /// Wall interval of an event, repaired so that a span never starts
    /// before 2000 nor ends before it starts. Returns whether it was repaired.
    pub fn event_interval(&self, event: &Event) -> ((i64, i64), bool) {
        let start = self.wall(secs_to_ns(event.start()));
        let end = self.wall(secs_to_ns(event.end()));
        let fixed_start = start.max(Y2000_UNIX_NS);
        let fixed_end = end.max(fixed_start);
        ((fixed_start, fixed_end), fixed_start != start || fixed_end != end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::model::event_for_test;

    fn build(ts: &str, start: f64, total: f64) -> Build {
        Build {
            timestamp: Some(ts.to_owned()),
            start_s: Some(start),
            total_elapsed_s: Some(total),
            ..Default::default()
        }
    }

    /// An event with the given times (`rule_type` set when `rule`).
    fn event(rule: bool, start: Option<f64>, end: Option<f64>) -> Event<'static> {
        let mut json = String::from(r#"{"name": "e""#);
        if rule {
            json.push_str(r#", "rule_type": "compile""#);
        }
        for (key, value) in [("start_s", start), ("end_s", end)] {
            if let Some(v) = value {
                json.push_str(&format!(r#", "{key}": {v:?}"#));
            }
        }
        json.push('}');
        event_for_test(&json)
    }

    fn rule(start: Option<f64>, end: Option<f64>) -> Event<'static> {
        event(true, start, end)
    }

    #[test]
    fn timestamp_with_and_without_fraction() {
        assert_eq!(
            parse_timestamp("2026-11-30T03:43:45.418084+00:00"),
            Some(1_796_010_225_418_084_000)
        );
        assert_eq!(
            parse_timestamp("2026-11-30T03:43:45+00:00"),
            Some(1_796_010_225_000_000_000)
        );
        assert_eq!(
            parse_timestamp("2026-11-30T03:43:45.418084Z"),
            Some(1_796_010_225_418_084_000)
        );
        // 05:43:45 at +02:00 is 03:43:45 UTC.
        assert_eq!(
            parse_timestamp("2026-11-30T05:43:45.5+02:00"),
            Some(1_796_010_225_500_000_000)
        );
        assert_eq!(parse_timestamp("2026-11-30T03:43:45"), None);
        assert_eq!(parse_timestamp("yesterday"), None);
        assert_eq!(parse_timestamp(""), None);
    }

    #[test]
    fn reconstruction_is_exact_in_ns() {
        // Case 01 of the corpus: the root ends exactly at the timestamp.
        let b = build("2026-11-30T03:43:45.418084+00:00", 1069.281004, 4.636988);
        let c = Clock::for_build(&b).unwrap();
        assert_eq!(
            c.root_interval(),
            (1_796_010_220_781_096_000, 1_796_010_225_418_084_000)
        );
        // vec2.cpp's start: 1069.408539 → 127.535 ms after the root start.
        let e = rule(Some(1069.408539), Some(1069.74683));
        assert_eq!(c.event_interval(&e).0 .0, 1_796_010_220_781_096_000 + 127_535_000);
    }

    #[test]
    fn sentinel_and_window() {
        let c = Clock::for_build(&build("2026-11-30T03:43:45+00:00", 100.0, 10.0)).unwrap();
        assert!(c.is_anchored(&rule(Some(100.5), Some(101.0))));
        assert!(
            c.is_anchored(&rule(Some(99.0), Some(111.0))),
            "1 s of slack on each side"
        );
        assert!(!c.is_anchored(&rule(Some(0.0), Some(101.0))), "0.0 sentinel");
        assert!(
            !c.is_anchored(&rule(None, Some(101.0))),
            "missing start defaults to 0.0"
        );
        assert!(!c.is_anchored(&rule(Some(98.9), Some(101.0))));
        assert!(!c.is_anchored(&rule(Some(105.0), Some(111.5))));
        assert!(
            !c.is_anchored(&rule(Some(-1.7e9), Some(-1.7e9 + 1.0))),
            "make's failure value"
        );
    }

    #[test]
    fn missing_or_ancient_timestamp_is_an_error() {
        let mut b = build("x", 1.0, 1.0);
        b.timestamp = None;
        assert_eq!(Clock::for_build(&b), Err(ClockError::MissingTimestamp));
        assert!(matches!(
            Clock::for_build(&build("nope", 1.0, 1.0)),
            Err(ClockError::UnparseableTimestamp(_))
        ));
        assert!(matches!(
            Clock::for_build(&build("1999-12-31T23:59:59+00:00", 1.0, 1.0)),
            Err(ClockError::Before2000(_))
        ));
        assert!(matches!(
            Clock::for_build(&build("2000-01-01T00:00:01+00:00", 0.0, 5.0)),
            Err(ClockError::Before2000(_))
        ));
    }

    #[test]
    fn spans_are_clamped_to_2000_and_non_negative() {
        let c = Clock::for_build(&build("2026-11-30T03:43:45+00:00", 100.0, 10.0)).unwrap();
        let phase = event(false, Some(-1e12), Some(-1e12 + 1.0));
        let ((s, e), fixed) = c.event_interval(&phase);
        assert!(fixed);
        assert_eq!((s, e), (Y2000_UNIX_NS, Y2000_UNIX_NS));
        let backwards = event(false, Some(105.0), Some(104.0));
        let ((s, e), fixed) = c.event_interval(&backwards);
        assert!(fixed && s == e);
    }

    #[test]
    fn absurd_values_do_not_overflow() {
        let c = Clock::for_build(&build("2026-11-30T03:43:45+00:00", 100.0, 10.0)).unwrap();
        let e = rule(Some(1e300), Some(f64::MAX));
        assert!(!c.is_anchored(&e));
        let _ = c.event_interval(&e);
        assert!(Clock::for_build(&build("2026-11-30T03:43:45+00:00", 1e300, -1e300)).is_err());
    }
}
