//! The header hashes each PCH/PCM compile's manifest had
//! ([`crate::rebuild::HeaderHashes`]), kept per (scope, identity) for the
//! next compile's comparison: compiletools rewrites the manifest in place
//! when it plans the next build, so only the history still knows them.
//!
//! Apart from the targets ([`super::lru`]): a build has a handful of
//! precompiled headers among 100k compiles, so the targets' records stay
//! as small as they were. Bounds: [`MAX_MANIFEST_TARGETS`] headers (the
//! one compiled longest ago goes first), two manifests each (the newest
//! and the one before, as the CAS keys: the last committed build, read
//! again, still finds the one before its own), and each manifest within
//! the limits of `rebuild::manifest_hashes`.

use std::collections::HashMap;

use super::record::BuildKey;
use crate::rebuild::HeaderHashes;

/// Precompiled headers and BMIs remembered (all scopes together).
pub(crate) const MAX_MANIFEST_TARGETS: usize = 4096;

/// One compile's manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptManifest {
    pub build: BuildKey,
    pub hashes: HeaderHashes,
}

/// The kept manifests, by (scope "host NUL variant", identity).
#[derive(Debug, Default)]
pub struct Manifests {
    by_target: HashMap<(Box<str>, Box<str>), Vec<KeptManifest>>,
}

impl Manifests {
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_target.len()
    }

    /// The newest manifest of a build strictly older than `build`.
    pub fn before(&self, scope: &str, identity: &str, build: BuildKey) -> Option<&HeaderHashes> {
        let kept = self.get(scope, identity)?;
        kept.iter().rev().find(|m| m.build < build).map(|m| &m.hashes)
    }

    /// The manifest recorded for `build` itself: a re-read of a committed
    /// build uses it, not the file (rewritten by later builds since).
    pub fn of_build(&self, scope: &str, identity: &str, build: BuildKey) -> Option<&HeaderHashes> {
        let kept = self.get(scope, identity)?;
        kept.iter().find(|m| m.build == build).map(|m| &m.hashes)
    }

    fn get(&self, scope: &str, identity: &str) -> Option<&Vec<KeptManifest>> {
        // Few entries: a lookup with owned keys costs two small copies,
        // once per precompiled header of a build.
        self.by_target.get(&(Box::from(scope), Box::from(identity)))
    }

    /// Records `manifest`, keeping the newest two per target (a build
    /// already recorded is replaced); at [`MAX_MANIFEST_TARGETS`], the
    /// target whose newest manifest is oldest is forgotten first.
    pub fn record(&mut self, scope: &str, identity: &str, manifest: KeptManifest) {
        let key = (Box::from(scope), Box::from(identity));
        if !self.by_target.contains_key(&key) && self.by_target.len() >= MAX_MANIFEST_TARGETS {
            let oldest = self
                .by_target
                .iter()
                .min_by_key(|(k, v)| (v.last().map(|m| m.build), (*k).clone()))
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                self.by_target.remove(&oldest);
            }
        }
        let kept = self.by_target.entry(key).or_default();
        match kept.binary_search_by_key(&manifest.build, |m| m.build) {
            Ok(i) => kept[i] = manifest,
            Err(0) if kept.len() >= 2 => {}
            Err(i) => {
                kept.insert(i, manifest);
                let excess = kept.len().saturating_sub(2);
                kept.drain(..excess);
            }
        }
    }

    /// Every (scope, identity, manifests), in a stable order (the codec's).
    pub fn iter_sorted(&self) -> Vec<(&str, &str, &[KeptManifest])> {
        let mut all: Vec<(&str, &str, &[KeptManifest])> = self
            .by_target
            .iter()
            .map(|((s, i), v)| (&**s, &**i, v.as_slice()))
            .collect();
        all.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        all
    }

    pub fn heap_bytes(&self) -> usize {
        self.by_target
            .iter()
            .map(|((s, i), v)| {
                s.len() + i.len() + 64 + v.iter().map(|m| m.hashes.heap_bytes() + 48).sum::<usize>()
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(t: i64) -> BuildKey {
        BuildKey {
            start_unix_ns: t,
            tie: 0,
        }
    }

    fn kept(t: i64, cmd_hash: u64) -> KeptManifest {
        KeptManifest {
            build: key(t),
            hashes: HeaderHashes {
                cmd_hash,
                headers: Box::new([]),
            },
        }
    }

    #[test]
    fn keeps_two_per_target_and_looks_strictly_back() {
        let mut m = Manifests::default();
        m.record("h\0v", "/p/pch.hpp", kept(20, 2));
        m.record("h\0v", "/p/pch.hpp", kept(10, 1));
        m.record("h\0v", "/p/pch.hpp", kept(30, 3));
        m.record("h\0v", "/p/pch.hpp", kept(5, 9)); // older than both kept: not kept
        assert_eq!(
            m.before("h\0v", "/p/pch.hpp", key(30)).map(|h| h.cmd_hash),
            Some(2)
        );
        assert_eq!(
            m.before("h\0v", "/p/pch.hpp", key(31)).map(|h| h.cmd_hash),
            Some(3)
        );
        assert_eq!(m.before("h\0v", "/p/pch.hpp", key(20)), None, "forgotten");
        assert_eq!(
            m.of_build("h\0v", "/p/pch.hpp", key(30)).map(|h| h.cmd_hash),
            Some(3)
        );
        m.record("h\0v", "/p/pch.hpp", kept(30, 7));
        assert_eq!(
            m.of_build("h\0v", "/p/pch.hpp", key(30)).map(|h| h.cmd_hash),
            Some(7)
        );
        assert_eq!(m.before("h\0w", "/p/pch.hpp", key(99)), None, "another scope");
    }

    #[test]
    fn bounded_the_oldest_goes_first() {
        let mut m = Manifests::default();
        for i in 0..MAX_MANIFEST_TARGETS as i64 {
            m.record("h\0v", &format!("/p/{i}.hpp"), kept(100 + i, 0));
        }
        m.record("h\0v", "/p/new.hpp", kept(1_000_000, 0));
        assert_eq!(m.len(), MAX_MANIFEST_TARGETS);
        assert_eq!(m.before("h\0v", "/p/0.hpp", key(i64::MAX)), None);
        assert!(m.before("h\0v", "/p/1.hpp", key(i64::MAX)).is_some());
    }
}
