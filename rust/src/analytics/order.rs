//! The two orders of a build's rules that the sweep and the critical path
//! walk, sorted once per build and shared. Each entry carries the times it
//! is sorted by, so that walking an order never jumps around the rule table
//! (at 100k rules, sorting and walking plain indices spent most of their
//! time on cache misses).

use super::Interval;

/// A rule in start order: its start and its index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct StartKey {
    pub start: i64,
    pub rule: u32,
}

/// A rule in end order. The derived order is the field order: by end; among
/// equal ends, rules that took time before zero-length ones, and among
/// those the later start first (so the earlier start comes *last*), then
/// the higher index first.
///
/// Why: the sweep treats a zero-length rule as running for an instant right
/// after the rules that end at its instant (so it never overlaps them). The
/// critical-path walk reads this order backwards, so among rules ending at
/// the same instant it meets the one that started earliest first, then the
/// first in file order: the longest candidate, and a deterministic one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct EndKey {
    pub end: i64,
    /// `−start` for a rule that took time; `i64::MAX` for a zero-length one.
    tie: i64,
    /// `u32::MAX − index`.
    reversed_rule: u32,
}

impl EndKey {
    fn of(rule: u32, interval: Interval) -> Self {
        Self {
            end: interval.end,
            tie: if interval.is_instant() {
                i64::MAX
            } else {
                // A start of i64::MIN saturates; the order among such
                // absurd values does not matter.
                interval.start.saturating_neg()
            },
            reversed_rule: u32::MAX - rule,
        }
    }

    pub fn rule(self) -> u32 {
        u32::MAX - self.reversed_rule
    }

    pub fn is_instant(self) -> bool {
        self.tie == i64::MAX
    }

    pub fn start(self) -> i64 {
        if self.is_instant() {
            self.end
        } else {
            self.tie.saturating_neg()
        }
    }
}

/// Rules by start time (ties by index; the sweep does not care).
pub fn by_start(rules: &[Interval]) -> Vec<StartKey> {
    let mut order: Vec<StartKey> = numbered(rules)
        .map(|(rule, r)| StartKey { start: r.start, rule })
        .collect();
    order.sort_unstable();
    order
}

/// Rules by end time, see [`EndKey`].
pub fn by_end(rules: &[Interval]) -> Vec<EndKey> {
    let mut order: Vec<EndKey> = numbered(rules).map(|(rule, r)| EndKey::of(rule, r)).collect();
    order.sort_unstable();
    order
}

/// The rules with u32 indices (the analytics never hold more rules than
/// the model's u32 tables can).
fn numbered(rules: &[Interval]) -> impl Iterator<Item = (u32, Interval)> + '_ {
    rules
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((u32::try_from(i).ok()?, *r)))
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
        let ends = by_end(&rules);
        let order: Vec<u32> = ends.iter().map(|k| k.rule()).collect();
        assert_eq!(order, [3, 0, 4, 2, 1]);
        let times: Vec<(i64, i64, bool)> = ends.iter().map(|k| (k.start(), k.end, k.is_instant())).collect();
        assert_eq!(
            times,
            [
                (0, 3, false),
                (5, 10, false),
                (2, 10, false),
                (2, 10, false),
                (10, 10, true)
            ]
        );
        let starts: Vec<u32> = by_start(&rules).iter().map(|k| k.rule).collect();
        assert_eq!(starts, [3, 2, 4, 0, 1]);
    }
}
