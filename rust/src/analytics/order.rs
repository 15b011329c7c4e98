//! The two orders of a build's rules that the sweep and the critical path
//! walk. Both are sorted once per build and shared.

use std::cmp::Ordering;

use super::Interval;

/// Rule indices by start time (ties in any order: the sweep does not care).
pub fn by_start(rules: &[Interval]) -> Vec<u32> {
    let mut order = indices(rules);
    order.sort_unstable_by_key(|&i| start_of(rules, i));
    order
}

/// Rule indices by end time; among equal ends, rules that took time come
/// before zero-length ones, then the earlier start *last*, then the lower
/// index last.
///
/// Why: the sweep treats a zero-length rule as running for an instant right
/// after the rules that end at its instant (so it is never counted as
/// overlapping them). The critical-path walk reads this order backwards,
/// so among rules ending at the same instant it meets the one that started
/// earliest first, then the first in file order: the longest candidate,
/// and a deterministic one.
pub fn by_end(rules: &[Interval]) -> Vec<u32> {
    let mut order = indices(rules);
    order.sort_unstable_by(|&a, &b| end_key_cmp(rules, a, b));
    order
}

fn end_key_cmp(rules: &[Interval], a: u32, b: u32) -> Ordering {
    let (ra, rb) = (interval(rules, a), interval(rules, b));
    ra.end
        .cmp(&rb.end)
        .then_with(|| ra.is_instant().cmp(&rb.is_instant()))
        .then_with(|| rb.start.cmp(&ra.start))
        .then_with(|| b.cmp(&a))
}

fn indices(rules: &[Interval]) -> Vec<u32> {
    (0..rules.len()).filter_map(|i| u32::try_from(i).ok()).collect()
}

fn start_of(rules: &[Interval], i: u32) -> i64 {
    interval(rules, i).start
}

/// The interval of rule `i`; an index is always one of `rules` (the orders
/// are made from `rules`), the default only keeps this panic-free.
pub(super) fn interval(rules: &[Interval], i: u32) -> Interval {
    rules.get(i as usize).copied().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_order_puts_instants_last_and_long_rules_late() {
        let rules = [
            Interval::new(5, 10),  // 0
            Interval::new(10, 10), // 1: instant at 10
            Interval::new(2, 10),  // 2: ends at 10, started earlier than 0
            Interval::new(0, 3),   // 3
            Interval::new(2, 10),  // 4: same as 2, later in file order
        ];
        assert_eq!(by_end(&rules), [3, 0, 4, 2, 1]);
        assert_eq!(by_start(&rules)[0], 3);
        assert_eq!(by_start(&rules)[4], 1);
    }
}
