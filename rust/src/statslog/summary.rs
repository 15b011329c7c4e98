//! The ccache summary of a build (formats.md §3.4): the twelve `ct.ccache.*` root
//! attributes, the two hit-rate gauges of formats.md §3.5, and `H` of the
//! `ct.build.*` aggregates.

use super::EventCount;
use crate::timing::CcacheHits;

/// The statslog counts compiletools summarises; every other event name only
/// reaches `ct.ccache.events`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CcacheSummary {
    /// D: `direct_cache_hit`.
    pub direct_hits: u64,
    /// P: `preprocessed_cache_hit`.
    pub preprocessed_hits: u64,
    /// M: `cache_miss`.
    pub misses: u64,
    /// `local_storage_write`.
    pub local_writes: u64,
    pub remote_hits: u64,
    pub remote_misses: u64,
    pub remote_writes: u64,
    pub remote_errors: u64,
    pub remote_timeouts: u64,
}

impl CcacheSummary {
    pub fn from_events(events: &[EventCount]) -> Self {
        let mut s = Self::default();
        for e in events {
            let slot = match e.name.as_str() {
                "direct_cache_hit" => &mut s.direct_hits,
                "preprocessed_cache_hit" => &mut s.preprocessed_hits,
                "cache_miss" => &mut s.misses,
                "local_storage_write" => &mut s.local_writes,
                "remote_storage_hit" => &mut s.remote_hits,
                "remote_storage_miss" => &mut s.remote_misses,
                "remote_storage_write" => &mut s.remote_writes,
                "remote_storage_error" => &mut s.remote_errors,
                "remote_storage_timeout" => &mut s.remote_timeouts,
                _ => continue,
            };
            *slot = slot.saturating_add(e.count);
        }
        s
    }

    /// D + P + M (`direct_cache_miss` and `preprocessed_cache_miss` are
    /// secondary events, not calls).
    pub fn cacheable_calls(&self) -> u64 {
        self.hits_total().saturating_add(self.misses)
    }

    /// (D + P) / (D + P + M), `0.0` when there was no cacheable call (formats.md
    /// §8 item 14: "no data" and "zero" look the same, as in compiletools).
    pub fn hit_rate(&self) -> f64 {
        ratio(self.hits_total(), self.cacheable_calls())
    }

    /// hit / (hit + miss) over `remote_storage_*`, `0.0` without lookups.
    pub fn remote_hit_rate(&self) -> f64 {
        ratio(
            self.remote_hits,
            self.remote_hits.saturating_add(self.remote_misses),
        )
    }

    /// The hits the `ct.build.*` aggregates take as `H`.
    pub fn hits(&self) -> CcacheHits {
        CcacheHits {
            direct_cache_hit: self.direct_hits,
            preprocessed_cache_hit: self.preprocessed_hits,
        }
    }

    fn hits_total(&self) -> u64 {
        self.direct_hits.saturating_add(self.preprocessed_hits)
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statslog::parse;

    #[test]
    fn formulas() {
        let log = parse(
            b"direct_cache_hit\ndirect_cache_hit\npreprocessed_cache_hit\ncache_miss\ncache_miss\n\
              direct_cache_miss\nlocal_storage_write\nremote_storage_hit\nremote_storage_miss\n\
              remote_storage_miss\nremote_storage_miss\nremote_storage_write\nremote_storage_error\n\
              remote_storage_timeout\n",
        );
        let s = log.summary();
        assert_eq!(
            (s.direct_hits, s.preprocessed_hits, s.misses, s.cacheable_calls()),
            (2, 1, 2, 5)
        );
        assert_eq!(
            (s.local_writes, s.remote_hits, s.remote_misses, s.remote_writes),
            (1, 1, 3, 1)
        );
        assert_eq!((s.remote_errors, s.remote_timeouts), (1, 1));
        assert_eq!(s.hit_rate(), 3.0 / 5.0);
        assert_eq!(s.remote_hit_rate(), 0.25);
        assert_eq!(s.hits().total(), 3);
    }

    #[test]
    fn undefined_rates_are_zero() {
        let s = parse(b"called_for_preprocessing\n").summary().to_owned();
        assert_eq!(
            (s.cacheable_calls(), s.hit_rate(), s.remote_hit_rate()),
            (0, 0.0, 0.0)
        );
        // Case 19's numbers: 25 hits, 31 misses.
        let s = CcacheSummary {
            direct_hits: 25,
            misses: 31,
            ..Default::default()
        };
        assert_eq!(s.hit_rate(), 0.44642857142857145);
    }
}
