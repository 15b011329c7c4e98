//! The four kinds of CAS store (formats.md §6.1).
//!
//! This enum is the one definition of the kinds: cbindgen exports it to the
//! C header as `CtCasKind` (`CT_CAS_KIND_OBJ` … `CT_CAS_KIND_EXE`), the
//! numbers the Go receiver puts in `CtCasCell.kind`, and [`CasKind::as_str`]
//! gives the names the configuration and the `cas_kind` attribute use.

use std::fmt;

/// A kind of CAS store. The declaration order is the order compiletools
/// uses everywhere it lists kinds (formats.md §3.6: obj, pch, pcm, exe), and the
/// derived `Ord` follows it. The discriminants are the C ABI's numbers:
/// never renumber one.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CasKind {
    /// Object files (`cas-objdir`, formats.md §6.3).
    Obj = 0,
    /// Precompiled headers (`cas-pchdir`, formats.md §6.4).
    Pch = 1,
    /// C++20 module / header-unit BMIs (`cas-pcmdir`, formats.md §6.5).
    Pcm = 2,
    /// Linked executables and libraries (`cas-exedir`, formats.md §6.6).
    Exe = 3,
}

impl CasKind {
    /// Every kind, in compiletools' order. (A function, not an associated
    /// const: cbindgen, which scans the whole crate for the C header, would
    /// try to export the const.)
    pub fn all() -> [CasKind; 4] {
        [CasKind::Obj, CasKind::Pch, CasKind::Pcm, CasKind::Exe]
    }

    /// The `cas_kind` attribute value and the suffix of the
    /// `ct.cas.<metric>.<kind>` span attributes.
    pub fn as_str(self) -> &'static str {
        match self {
            CasKind::Obj => "obj",
            CasKind::Pch => "pch",
            CasKind::Pcm => "pcm",
            CasKind::Exe => "exe",
        }
    }

    /// Inverse of [`CasKind::as_str`].
    pub fn parse(s: &str) -> Option<CasKind> {
        CasKind::all().into_iter().find(|k| k.as_str() == s)
    }

    /// The kind whose C ABI number is `n` (a `CT_CAS_KIND_*` value).
    pub fn from_number(n: u32) -> Option<CasKind> {
        CasKind::all().into_iter().find(|k| *k as u32 == n)
    }
}

impl fmt::Display for CasKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_in_order() {
        let names: Vec<&str> = CasKind::all().iter().map(|k| k.as_str()).collect();
        assert_eq!(names, ["obj", "pch", "pcm", "exe"]);
        for k in CasKind::all() {
            assert_eq!(CasKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(CasKind::parse("OBJ"), None);
        for (n, k) in CasKind::all().into_iter().enumerate() {
            assert_eq!(CasKind::from_number(n as u32), Some(k));
        }
        assert_eq!(CasKind::from_number(4), None);
        let mut sorted = vec![CasKind::Exe, CasKind::Obj, CasKind::Pcm, CasKind::Pch];
        sorted.sort();
        assert_eq!(sorted, CasKind::all());
    }
}
