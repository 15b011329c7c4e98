//! The critical path, estimated from timing alone.
//!
//! `timing.json` has no dependency edges (formats.md §2), so the path is guessed
//! the way one reads a build timeline: start from the rule that finished
//! last; its predecessor is the rule that finished latest at or before the
//! current rule's start (give or take the backend's clock resolution),
//! and so on until no rule finished before. The assumptions, documented in
//! the README:
//!
//! * a rule starts as soon as its last dependency ends, so the latest end
//!   before a start is the dependency that held it back (false when a rule
//!   waited for a free job slot or for untimed work: the path then runs
//!   through a rule that merely finished at the right moment);
//! * the path's length is the wall time from its first rule's start to its
//!   last rule's end, gaps included (time in which the path waited for
//!   work the timing does not show still delays the build);
//! * each step goes to a rule that started strictly earlier, so the walk
//!   ends, and the path is a chain in time: every rule ends no later than
//!   its successor starts plus the tolerance.

use super::order::EndKey;

/// Clock resolution of the rule times of a backend, ns (formats.md §2.4): ninja
/// logs whole milliseconds; shake and make measure microseconds, which is
/// also the resolution of every time in the file (6 decimals).
pub fn clock_resolution_ns(backend: &str) -> i64 {
    match backend {
        "ninja" => 1_000_000,
        _ => 1_000,
    }
}

/// The estimated path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CriticalPath {
    /// Rule indices from first to last (by start, strictly increasing).
    pub rules: Vec<u32>,
    /// First rule's start to last rule's end, ns; 0 without rules.
    pub length_ns: i64,
}

/// Walks back from the rule that finished last through the rules in
/// [`super::order::by_end`] order.
pub fn estimate(by_end: &[EndKey], tolerance_ns: i64) -> CriticalPath {
    let Some(&last) = by_end.last() else {
        return CriticalPath {
            rules: Vec::new(),
            length_ns: 0,
        };
    };
    let mut path = vec![last.rule()];
    let mut current = last;
    loop {
        let start = current.start();
        let bound = start.saturating_add(tolerance_ns);
        let ended = by_end.partition_point(|k| k.end <= bound);
        // Read backwards: the latest end first, and among equal ends the
        // longest rule (see `EndKey`). Rules that ended within the
        // tolerance but did not start earlier are skipped.
        let previous = by_end[..ended].iter().rev().find(|k| k.start() < start);
        let Some(&previous) = previous else { break };
        path.push(previous.rule());
        current = previous;
    }
    path.reverse();
    CriticalPath {
        rules: path,
        length_ns: last.end.saturating_sub(current.start()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::order::by_end;
    use super::super::Interval;
    use super::*;

    const MS: i64 = 1_000_000;

    fn walk(rules: &[(i64, i64)], tolerance_ns: i64) -> CriticalPath {
        let rules: Vec<Interval> = rules.iter().map(|&(s, e)| Interval::new(s, e)).collect();
        estimate(&by_end(&rules), tolerance_ns)
    }

    #[test]
    fn chain_through_parallel_fillers() {
        // Chain 0 → 2 → 4 with fillers 1 and 3 that end earlier.
        let path = walk(
            &[
                (0, 10 * MS),
                (MS, 6 * MS),
                (10 * MS, 30 * MS),
                (12 * MS, 20 * MS),
                (30 * MS, 35 * MS),
            ],
            1_000,
        );
        assert_eq!(path.rules, [0, 2, 4]);
        assert_eq!(path.length_ns, 35 * MS);
    }

    #[test]
    fn tolerance_bridges_the_clock_resolution() {
        // The dependency appears to end 1 ms after its dependent started.
        let rules = [(0, 11 * MS), (10 * MS, 20 * MS)];
        assert_eq!(walk(&rules, 1_000).rules, [1]);
        let ninja = walk(&rules, clock_resolution_ns("ninja"));
        assert_eq!(ninja.rules, [0, 1]);
        assert_eq!(ninja.length_ns, 20 * MS);
    }

    #[test]
    fn gaps_count_and_ties_prefer_the_longest() {
        // Two rules end together at 10 ms; the earlier-starting one is taken.
        let path = walk(&[(5 * MS, 10 * MS), (2 * MS, 10 * MS), (15 * MS, 16 * MS)], 1_000);
        assert_eq!(path.rules, [1, 2]);
        assert_eq!(path.length_ns, 14 * MS);
    }

    #[test]
    fn instants_at_one_time_end_the_walk() {
        let path = walk(&[(MS, MS), (MS, MS), (MS, MS)], MS);
        assert_eq!(path.rules.len(), 1);
        assert_eq!(path.length_ns, 0);
        assert_eq!(walk(&[], MS).rules, Vec::<u32>::new());
    }
}
