//! What the history keeps of whole builds: per (host, variant, pipeline),
//! the last [`BUILDS_KEPT`] builds committed — their trace id (the root
//! span's id follows from it, `crate::ids`), duration, critical path and
//! the identities of their rules — so that the next build can link its
//! root span to the previous one's and say what changed since
//! ([`Comparison`], docs/rebuilds.md).

use std::collections::HashMap;

use super::record::BuildKey;

/// Builds kept per scope: the newest and the one before, so that the last
/// committed build, read again, still finds the build before it.
pub(crate) const BUILDS_KEPT: usize = 2;
/// Scopes kept (host × variant × pipeline); beyond it the scope whose
/// newest build is the oldest is forgotten.
pub(crate) const MAX_BUILD_SCOPES: usize = 4096;

/// One committed build, as the next one compares with it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BuildRecord {
    pub key: BuildKey,
    pub trace_id: [u8; 16],
    pub duration_ns: i64,
    /// The critical path's length (ns) and a hash of the set of its rules'
    /// identities; `None` without analytics.
    pub critical_path: Option<(i64, u64)>,
    /// The stable hashes of its counted rules' identities, ascending,
    /// without duplicates.
    pub rules: Box<[u64]>,
}

/// This build against the previous one of its scope.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Comparison {
    /// The previous build's trace id: its root span is
    /// `ids::span_id(trace_id, &[])`.
    pub previous_trace_id: [u8; 16],
    /// Rules (by identity) in this build and not in the previous one.
    pub rules_added: u64,
    /// Rules in the previous build and not in this one.
    pub rules_removed: u64,
    /// This build's duration − the previous one's, s.
    pub duration_delta_s: f64,
    /// This build's critical path − the previous one's, s; and whether the
    /// path runs through other rules. `None` unless both have one.
    pub critical_path_delta_s: Option<f64>,
    pub critical_path_changed: Option<bool>,
}

impl Comparison {
    /// `this` against `previous`.
    pub fn of(previous: &BuildRecord, this: &BuildRecord) -> Comparison {
        let (added, removed) = difference_counts(&this.rules, &previous.rules);
        let both = this.critical_path.zip(previous.critical_path);
        Comparison {
            previous_trace_id: previous.trace_id,
            rules_added: added,
            rules_removed: removed,
            duration_delta_s: (this.duration_ns as f64 - previous.duration_ns as f64) / 1e9,
            critical_path_delta_s: both.map(|((a, _), (b, _))| (a as f64 - b as f64) / 1e9),
            critical_path_changed: both.map(|((_, a), (_, b))| a != b),
        }
    }
}

/// (|a \ b|, |b \ a|) of two ascending sets, in one merge.
fn difference_counts(a: &[u64], b: &[u64]) -> (u64, u64) {
    let (mut i, mut j, mut only_a, mut only_b) = (0, 0, 0u64, 0u64);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                only_a += 1;
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                only_b += 1;
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
            }
        }
    }
    (only_a + (a.len() - i) as u64, only_b + (b.len() - j) as u64)
}

/// The kept builds by scope (host NUL variant NUL pipeline).
#[derive(Debug, Default)]
pub struct BuildRecords {
    by_scope: HashMap<Box<str>, Vec<BuildRecord>>,
}

impl BuildRecords {
    /// The newest build of `scope` strictly older than `key`.
    pub fn previous(&self, scope: &str, key: BuildKey) -> Option<&BuildRecord> {
        let kept = self.by_scope.get(scope)?;
        let end = kept.partition_point(|b| b.key < key);
        end.checked_sub(1).map(|i| &kept[i])
    }

    /// Records `build` in `scope`, keeping the newest [`BUILDS_KEPT`]; the
    /// same build again replaces itself.
    pub fn record(&mut self, scope: &str, build: BuildRecord) {
        if !self.by_scope.contains_key(scope) && self.by_scope.len() >= MAX_BUILD_SCOPES {
            self.forget_stalest_scope();
        }
        let kept = self.by_scope.entry(scope.into()).or_default();
        match kept.binary_search_by_key(&build.key, |b| b.key) {
            Ok(i) => kept[i] = build,
            Err(0) if kept.len() >= BUILDS_KEPT => {}
            Err(i) => kept.insert(i, build),
        }
        let excess = kept.len().saturating_sub(BUILDS_KEPT);
        kept.drain(..excess);
    }

    fn forget_stalest_scope(&mut self) {
        let stalest = self
            .by_scope
            .iter()
            .min_by_key(|(scope, kept)| (kept.last().map(|b| b.key), (*scope).clone()))
            .map(|(scope, _)| scope.clone());
        if let Some(scope) = stalest {
            self.by_scope.remove(&scope);
        }
    }

    /// Every scope and its builds, scopes in name order (a saved history is
    /// the same bytes for the same content).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[BuildRecord])> {
        let mut scopes: Vec<(&str, &[BuildRecord])> =
            self.by_scope.iter().map(|(s, b)| (&**s, b.as_slice())).collect();
        scopes.sort_unstable_by_key(|(s, _)| *s);
        scopes.into_iter()
    }

    #[cfg(test)]
    pub fn builds(&self) -> usize {
        self.by_scope.values().map(Vec::len).sum()
    }

    /// Estimated heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.by_scope
            .iter()
            .map(|(s, b)| s.len() + 64 + b.iter().map(|r| r.rules.len() * 8 + 96).sum::<usize>())
            .sum()
    }
}

/// The scope of a build: host, variant and pipeline, NUL-separated.
pub(super) fn build_scope_of(host: &str, variant: &str, pipeline: &str) -> String {
    format!("{host}\0{variant}\0{pipeline}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(t: i64, rules: &[u64], path: Option<(i64, u64)>) -> BuildRecord {
        BuildRecord {
            key: BuildKey {
                start_unix_ns: t,
                tie: 0,
            },
            trace_id: [t as u8; 16],
            duration_ns: t * 1_000_000_000,
            critical_path: path,
            rules: rules.into(),
        }
    }

    #[test]
    fn comparison_known_answer() {
        let old = record(10, &[1, 2, 3, 5], Some((4_000_000_000, 7)));
        let new = record(13, &[2, 3, 4, 6, 7], Some((2_500_000_000, 8)));
        let c = Comparison::of(&old, &new);
        assert_eq!((c.rules_added, c.rules_removed), (3, 2));
        assert_eq!(c.previous_trace_id, [10; 16]);
        assert_eq!(c.duration_delta_s, 3.0);
        assert_eq!(c.critical_path_delta_s, Some(-1.5));
        assert_eq!(c.critical_path_changed, Some(true));
        let same = Comparison::of(&new, &new);
        assert_eq!((same.rules_added, same.rules_removed), (0, 0));
        assert_eq!(same.critical_path_changed, Some(false));
        let unknown = Comparison::of(&record(1, &[], None), &new);
        assert_eq!(
            (unknown.critical_path_delta_s, unknown.critical_path_changed),
            (None, None)
        );
        assert_eq!(unknown.rules_added, 5);
    }

    #[test]
    fn previous_is_strictly_older_and_two_are_kept() {
        let mut b = BuildRecords::default();
        for t in [10, 30, 20] {
            b.record("s", record(t, &[], None));
        }
        assert_eq!(b.builds(), 2);
        let prev = |t| {
            b.previous(
                "s",
                BuildKey {
                    start_unix_ns: t,
                    tie: 0,
                },
            )
            .map(|r| r.key.start_unix_ns)
        };
        assert_eq!(prev(30), Some(20), "the last committed build, read again");
        assert_eq!(prev(31), Some(30));
        assert_eq!(prev(20), None, "forgotten");
        assert_eq!(b.previous("other", BuildKey::default()), None);
    }

    #[test]
    fn scopes_are_bounded() {
        let mut b = BuildRecords::default();
        for i in 0..MAX_BUILD_SCOPES + 3 {
            b.record(&format!("s{i}"), record(i as i64, &[], None));
        }
        assert_eq!(b.iter().count(), MAX_BUILD_SCOPES);
        assert!(b
            .previous(
                "s0",
                BuildKey {
                    start_unix_ns: 99_999,
                    tie: 0
                }
            )
            .is_none());
        assert!(b
            .previous(
                &format!("s{}", MAX_BUILD_SCOPES + 2),
                BuildKey {
                    start_unix_ns: 99_999,
                    tie: 0
                }
            )
            .is_some());
    }
}
