//! Parallelism and weighted time, exact, from one sweep over the rules'
//! start and end events.
//!
//! Weighted time is the definition of Chromium's
//! `post_build_ninja_summary.py`: at every instant, each running rule is
//! charged 1/k of the elapsed time, k being the number of rules running at
//! that instant. Rather than dividing every interval among its k rules
//! (quadratic when many rules overlap), the sweep integrates W(t) = ∫ 1/k
//! over time, and a rule's weighted time is W(end) − W(start): linear
//! after the two sorts. Summed over all rules this is the time during which
//! at least one rule ran (each busy instant is charged k × 1/k).
//!
//! Intervals are half-open, [start, end): a rule that starts when another
//! ends does not overlap it. A zero-length rule runs for an instant right
//! after the rules ending at its time (see [`super::order::by_end`]): it
//! counts towards the most rules running at once, and is charged nothing.

use super::order::{EndKey, StartKey};

const NS_PER_S: f64 = 1e9;

/// What the sweep found.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// Most rules running at the same instant.
    pub max_parallel: u64,
    /// Time during which at least one rule ran, ns.
    pub busy_ns: i64,
    /// Weighted time of each rule (same indices as the input), seconds.
    pub weighted_s: Vec<f64>,
}

/// Sweeps the rules of a build, given in [`super::order::by_start`] and
/// [`super::order::by_end`] order (the same rules in both).
pub fn sweep(by_start: &[StartKey], by_end: &[EndKey]) -> Sweep {
    let n = by_start.len();
    let mut weighted_s = vec![0.0; n];
    // W at each rule's start; its weighted time is W(end) minus this.
    let mut w_at_start = vec![0.0; n];
    let mut w = 0.0f64;
    let mut running = 0u64;
    let mut max_parallel = 0u64;
    let mut busy_ns = 0i64;
    let mut now: Option<i64> = None;
    let (mut starts, mut ends) = (by_start.iter().peekable(), by_end.iter().peekable());
    loop {
        // The next event: an end goes first when it is earlier, or at the
        // same instant unless it ends a zero-length rule (half-open
        // intervals; instants after the rules ending with them).
        let (next_start, next_end) = (starts.peek().copied(), ends.peek().copied());
        let take_end = match (next_start, next_end) {
            (None, None) => break,
            (None, Some(_)) => true,
            (Some(_), None) => false,
            (Some(s), Some(e)) => e.end < s.start || (e.end == s.start && !e.is_instant()),
        };
        let t = if take_end {
            next_end.map_or(0, |e| e.end)
        } else {
            next_start.map_or(0, |s| s.start)
        };
        if let Some(before) = now.filter(|&before| t > before) {
            if running > 0 {
                let dt = t.saturating_sub(before);
                busy_ns = busy_ns.saturating_add(dt);
                w += dt as f64 / NS_PER_S / running as f64;
            }
        }
        now = Some(t);
        if take_end {
            if let Some(e) = ends.next() {
                running = running.saturating_sub(1);
                let i = e.rule() as usize;
                if let (Some(out), Some(at_start)) = (weighted_s.get_mut(i), w_at_start.get(i)) {
                    // Never negative: W only grows (rounding aside).
                    *out = (w - at_start).max(0.0);
                }
            }
        } else if let Some(s) = starts.next() {
            running += 1;
            max_parallel = max_parallel.max(running);
            if let Some(at_start) = w_at_start.get_mut(s.rule as usize) {
                *at_start = w;
            }
        }
    }
    Sweep {
        max_parallel,
        busy_ns,
        weighted_s,
    }
}

#[cfg(test)]
mod tests {
    use super::super::order::{by_end, by_start};
    use super::super::Interval;
    use super::*;

    fn run(rules: &[(i64, i64)]) -> Sweep {
        let rules: Vec<Interval> = rules.iter().map(|&(s, e)| Interval::new(s, e)).collect();
        sweep(&by_start(&rules), &by_end(&rules))
    }

    const S: i64 = 1_000_000_000;

    #[test]
    fn overlap_is_shared() {
        // a: [0, 4 s), b: [2 s, 6 s): 2 s alone, 2 s shared, 2 s alone.
        let sw = run(&[(0, 4 * S), (2 * S, 6 * S)]);
        assert_eq!(sw.max_parallel, 2);
        assert_eq!(sw.busy_ns, 6 * S);
        assert_eq!(sw.weighted_s, [3.0, 3.0]);
    }

    #[test]
    fn touching_rules_do_not_overlap_and_gaps_are_not_busy() {
        let sw = run(&[(0, S), (S, 2 * S), (5 * S, 6 * S)]);
        assert_eq!(sw.max_parallel, 1);
        assert_eq!(sw.busy_ns, 3 * S);
        assert_eq!(sw.weighted_s, [1.0, 1.0, 1.0]);
    }

    #[test]
    fn instants_count_as_running_but_weigh_nothing() {
        // An instant at 1 s inside a [0, 2 s) rule, another where a rule ends.
        let sw = run(&[(0, 2 * S), (S, S), (2 * S, 2 * S)]);
        assert_eq!(sw.max_parallel, 2);
        assert_eq!(sw.busy_ns, 2 * S);
        assert_eq!(sw.weighted_s, [2.0, 0.0, 0.0]);
        // Alone, an instant is one rule running and no busy time.
        let sw = run(&[(S, S)]);
        assert_eq!((sw.max_parallel, sw.busy_ns), (1, 0));
    }

    #[test]
    fn nothing_to_sweep() {
        assert_eq!(
            run(&[]),
            Sweep {
                max_parallel: 0,
                busy_ns: 0,
                weighted_s: vec![]
            }
        );
    }
}
