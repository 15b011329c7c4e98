//! A compile's rebuild reason from its key and its source's previous one.

use super::CasKey;

/// Why a compile ran (`ct.rule.rebuild_reason`), docs/rebuilds.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RebuildReason {
    /// No earlier compile of this source on this host and variant.
    New = 1,
    /// The source's blob hash differs from its previous compile's.
    SourceChanged = 2,
    /// Same source, the transitive headers' hash differs.
    HeadersChanged = 3,
    /// Same source and headers, the macro state differs.
    FlagsChanged = 4,
    /// The same key as the previous compile: the object was gone (a
    /// trimmed store, a new CAS directory).
    Evicted = 5,
    /// The target is no CAS object name: what changed cannot be told.
    NotCas = 6,
}

/// Every reason, in the order of the metric's points and the root's counts
/// (not `pub`: cbindgen would export it into the C header).
pub(crate) const REASONS: [RebuildReason; 6] = [
    RebuildReason::New,
    RebuildReason::SourceChanged,
    RebuildReason::HeadersChanged,
    RebuildReason::FlagsChanged,
    RebuildReason::Evicted,
    RebuildReason::NotCas,
];

impl RebuildReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RebuildReason::New => "new",
            RebuildReason::SourceChanged => "source_changed",
            RebuildReason::HeadersChanged => "headers_changed",
            RebuildReason::FlagsChanged => "flags_changed",
            RebuildReason::Evicted => "evicted",
            RebuildReason::NotCas => "not_cas",
        }
    }

    /// Inverse of `self as u8`.
    pub fn from_code(code: u8) -> Option<RebuildReason> {
        REASONS.into_iter().find(|r| *r as u8 == code)
    }

    /// Position in [`REASONS`].
    pub fn index(self) -> usize {
        self as usize - 1
    }
}

/// The parts of the key that changed (`ct.rule.rebuild_changed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Changed(u8);

impl Changed {
    pub(crate) const SOURCE: u8 = 1;
    pub(crate) const HEADERS: u8 = 2;
    pub(crate) const FLAGS: u8 = 4;

    pub fn bits(self) -> u8 {
        self.0
    }

    pub fn from_bits(bits: u8) -> Changed {
        Changed(bits & 7)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The names of the changed parts in the order source, headers, flags
    /// (a static array per combination: a 100k-rule build allocates none).
    pub fn names(self) -> &'static [&'static str] {
        const SETS: [&[&str]; 8] = [
            &[],
            &["source"],
            &["headers"],
            &["source", "headers"],
            &["flags"],
            &["source", "flags"],
            &["headers", "flags"],
            &["source", "headers", "flags"],
        ];
        SETS[usize::from(self.0 & 7)]
    }
}

/// The reason of a compile whose target has `now` as its key (`None`: not
/// a CAS name), against `previous`, its source's key when last compiled
/// (`None`: never seen with a key). Several parts changed: the first of
/// source, headers, flags is the reason and [`Changed`] lists them all.
pub fn classify(previous: Option<CasKey>, now: Option<CasKey>) -> (RebuildReason, Changed) {
    let Some(now) = now else {
        return (RebuildReason::NotCas, Changed::default());
    };
    let Some(previous) = previous else {
        return (RebuildReason::New, Changed::default());
    };
    let mut bits = 0;
    if previous.file_hash != now.file_hash {
        bits |= Changed::SOURCE;
    }
    if previous.dep_hash != now.dep_hash {
        bits |= Changed::HEADERS;
    }
    if previous.macro_state_hash != now.macro_state_hash {
        bits |= Changed::FLAGS;
    }
    let reason = if bits & Changed::SOURCE != 0 {
        RebuildReason::SourceChanged
    } else if bits & Changed::HEADERS != 0 {
        RebuildReason::HeadersChanged
    } else if bits & Changed::FLAGS != 0 {
        RebuildReason::FlagsChanged
    } else {
        RebuildReason::Evicted
    };
    (reason, Changed(bits))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(file: u64, dep: u64, flags: u64) -> Option<CasKey> {
        Some(CasKey {
            file_hash: file,
            dep_hash: dep,
            macro_state_hash: flags,
        })
    }

    #[test]
    fn every_combination() {
        use RebuildReason::*;
        let was = key(1, 2, 3);
        let cases = [
            (key(1, 2, 3), Evicted, &[][..]),
            (key(9, 2, 3), SourceChanged, &["source"][..]),
            (key(1, 9, 3), HeadersChanged, &["headers"]),
            (key(1, 2, 9), FlagsChanged, &["flags"]),
            (key(9, 9, 3), SourceChanged, &["source", "headers"]),
            (key(1, 9, 9), HeadersChanged, &["headers", "flags"]),
            (key(9, 2, 9), SourceChanged, &["source", "flags"]),
            (key(9, 9, 9), SourceChanged, &["source", "headers", "flags"]),
        ];
        for (now, reason, changed) in cases {
            let (r, c) = classify(was, now);
            assert_eq!((r, c.names()), (reason, changed), "{now:?}");
            assert_eq!(Changed::from_bits(c.bits()), c);
        }
        assert_eq!(classify(None, key(1, 2, 3)).0, New);
        assert_eq!(classify(was, None).0, NotCas);
        assert_eq!(classify(None, None).0, NotCas);
    }

    #[test]
    fn codes_round_trip() {
        for (i, r) in REASONS.into_iter().enumerate() {
            assert_eq!(RebuildReason::from_code(r as u8), Some(r));
            assert_eq!(r.index(), i);
        }
        assert_eq!(RebuildReason::from_code(0), None);
        assert_eq!(RebuildReason::from_code(7), None);
        let names: Vec<&str> = REASONS.iter().map(|r| r.as_str()).collect();
        assert_eq!(
            names,
            [
                "new",
                "source_changed",
                "headers_changed",
                "flags_changed",
                "evicted",
                "not_cas"
            ]
        );
    }
}
