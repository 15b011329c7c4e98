//! File-name rules of the CAS layouts (formats.md §6.3–§6.6), on raw name bytes.
//!
//! compiletools matches names with Python's `re.match(r"^…$", name)` on the
//! `str` that `os.scandir` returns. Two details of that are mirrored on
//! purpose, because the numbers must equal `ct-cache-report`'s:
//! * Python's `$` also matches just before one trailing `\n`, so a directory
//!   named `"ab\n"` is a shard and `"0123456789abcdef\n"` a command-hash
//!   directory (whose name, newline included, then appears in the
//!   `<unknown:…>` bucket key);
//! * `.` matches every character except `\n`. Names that are not UTF-8
//!   reach Python as surrogate escapes, which `.` matches as well, so on
//!   bytes "any byte but `\n`" is the exact equivalent.
//!
//! `[0-9a-f]` is ASCII lower-case hex only; upper-case names never match.

/// Length of an object bucket key: `file_hash` (12 hex) + `dep_hash` (14 hex).
pub(crate) const OBJ_KEY_LEN: usize = 26;

/// Bucket key of an object entry: the `file_hash` and `dep_hash` bytes.
pub(crate) type ObjKey = [u8; OBJ_KEY_LEN];

/// `_<12 hex>_<14 hex>_<16 hex>.o`: the fixed-width tail of an object name.
pub(crate) const OBJ_TAIL_LEN: usize = 1 + 12 + 1 + 14 + 1 + 16 + 2;

/// Each byte's value as a lower-case hex digit, [`NOT_HEX`] for any other.
/// A table, not a `match`: hash digits are random, so a branch per digit
/// mispredicts half the time, and the rebuild reasons parse ~42 digits of
/// every compile of a 100k-rule build.
pub(crate) const HEX_VALUE: [u8; 256] = {
    let mut t = [NOT_HEX; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};
pub(crate) const NOT_HEX: u8 = 0x80;

pub(crate) fn is_lower_hex(bytes: &[u8]) -> bool {
    bytes.iter().fold(0u8, |bad, &b| bad | HEX_VALUE[usize::from(b)]) & NOT_HEX == 0
}

/// `^[0-9a-f]{width}$` with Python's `$` (see the module comment).
pub(crate) fn is_hex_name(name: &[u8], width: usize) -> bool {
    let core = if name.len() == width {
        name
    } else if name.len() == width + 1 && name.last() == Some(&b'\n') {
        &name[..width]
    } else {
        return false;
    };
    is_lower_hex(core)
}

/// Bucket key of an object file name, or `None` when the name is not an
/// entry: it must end in `.o` and match
/// `^(.+)_([0-9a-f]{12})_([0-9a-f]{14})_([0-9a-f]{16})\.o$`.
///
/// Because every group after `(.+)` has a fixed width and the name ends in
/// `.o` (so `$` can only match at the very end), the regex has exactly one
/// possible match: the basename is everything before the last 47 bytes.
pub(crate) fn parse_object_name(name: &[u8]) -> Option<ObjKey> {
    let parts = split_object_name(name)?;
    let mut key = [0u8; OBJ_KEY_LEN];
    key[..12].copy_from_slice(parts.file_hash);
    key[12..].copy_from_slice(parts.dep_hash);
    Some(key)
}

/// The four parts of an object file name (formats.md §6.3), borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectName<'n> {
    pub basename: &'n [u8],
    /// 12 lower-case hex digits: the source's git blob SHA-1, cut.
    pub file_hash: &'n [u8],
    /// 14 hex digits: the XOR of the transitive headers' hashes.
    pub dep_hash: &'n [u8],
    /// 16 hex digits: the effective macro state.
    pub macro_state_hash: &'n [u8],
}

/// Splits an object file name as [`parse_object_name`] matches it; `None`
/// when it is not an entry. Constant work whatever the name's length: only
/// the fixed-width tail and one scan of the basename for `\n`.
pub fn split_object_name(name: &[u8]) -> Option<ObjectName<'_>> {
    if name.len() <= OBJ_TAIL_LEN {
        return None; // the basename `(.+)` must be non-empty
    }
    let (basename, tail) = name.split_at(name.len() - OBJ_TAIL_LEN);
    if memchr::memchr(b'\n', basename).is_some() {
        return None;
    }
    let (sep1, rest) = tail.split_at(1);
    let (file_hash, rest) = rest.split_at(12);
    let (sep2, rest) = rest.split_at(1);
    let (dep_hash, rest) = rest.split_at(14);
    let (sep3, rest) = rest.split_at(1);
    let (macro_state_hash, dot_o) = rest.split_at(16);
    let shape_ok = sep1 == b"_" && sep2 == b"_" && sep3 == b"_" && dot_o == b".o";
    if !shape_ok || !is_lower_hex(file_hash) || !is_lower_hex(dep_hash) || !is_lower_hex(macro_state_hash) {
        return None;
    }
    Some(ObjectName {
        basename,
        file_hash,
        dep_hash,
        macro_state_hash,
    })
}

/// The artefact suffixes of the exe store, in the order compiletools tests
/// them (formats.md §6.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ExeSuffix {
    Exe,
    A,
    So,
}

impl ExeSuffix {
    const ALL: [ExeSuffix; 3] = [ExeSuffix::Exe, ExeSuffix::A, ExeSuffix::So];

    pub(crate) fn as_bytes(self) -> &'static [u8] {
        match self {
            ExeSuffix::Exe => b".exe",
            ExeSuffix::A => b".a",
            ExeSuffix::So => b".so",
        }
    }
}

/// Splits an exe-store leaf name `<basename>_<link_key><suffix>` into its
/// basename and suffix, as compiletools' `_split_exe_leaf_name`: first
/// suffix that matches, then the **last** `_` of the stem; no `_`, or `_`
/// as the first byte, means "not an entry". The link key is not validated.
pub(crate) fn split_exe_name(name: &[u8]) -> Option<(&[u8], ExeSuffix)> {
    let suffix = ExeSuffix::ALL
        .into_iter()
        .find(|s| name.ends_with(s.as_bytes()))?;
    let stem = &name[..name.len() - suffix.as_bytes().len()];
    // `_` is ASCII, so a byte search finds the same position as Python's
    // `str.rfind` (UTF-8 continuation bytes and surrogate escapes are ≥ 0x80).
    match stem.iter().rposition(|b| *b == b'_') {
        Some(sep) if sep > 0 => Some((&stem[..sep], suffix)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OBJ: &[u8] = b"helper_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.o";

    #[test]
    fn hex_names_follow_python_dollar() {
        assert!(is_hex_name(b"0d", 2));
        assert!(is_hex_name(b"0d\n", 2));
        assert!(!is_hex_name(b"0D", 2));
        assert!(!is_hex_name(b"0d\n\n", 2));
        assert!(!is_hex_name(b"0dx", 2));
        assert!(!is_hex_name(b"0", 2));
        assert!(!is_hex_name(b"\n0d", 2));
        assert!(is_hex_name(b"56dff7d27b514966", 16));
        assert!(is_hex_name(b"56dff7d27b514966\n", 16));
        assert!(!is_hex_name(b"56dff7d27b51496", 16));
        assert!(!is_hex_name(b"56dff7d27b514966a", 16));
    }

    #[test]
    fn object_names() {
        let key = parse_object_name(OBJ).unwrap();
        assert_eq!(&key, b"0d99ae76451a0af5b42cc55ffb");
        // basename may contain `_` and hash-looking parts
        let k2 = parse_object_name(
            b"a_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.o",
        );
        assert_eq!(&k2.unwrap(), b"0d99ae76451a0af5b42cc55ffb");
        // non-UTF-8 basename is fine, a newline is not
        assert!(parse_object_name(b"\xff\xfe_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.o").is_some());
        assert!(parse_object_name(b"a\nb_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.o").is_none());
        // empty basename
        assert!(parse_object_name(b"_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.o").is_none());
        // sidecars and temps
        for bad in [
            &b"helper_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.o.lock"[..],
            b"helper_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.o.12345.ab12.tmp",
            b"helper_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.o.compiletools.tmp",
            b"helper_0D99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.o",
            b"helper_0d99ae76451a_0af5b42cc55ff_bd85fc71f180bdf74.o",
            b"helper_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.O",
            b"helper_0d99ae76451a-0af5b42cc55ffb_d85fc71f180bdf74.o",
            b".o",
            b"",
        ] {
            assert!(
                parse_object_name(bad).is_none(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn object_name_parts_known_answer() {
        let parts = split_object_name(OBJ).unwrap();
        assert_eq!(parts.basename, b"helper");
        assert_eq!(parts.file_hash, b"0d99ae76451a");
        assert_eq!(parts.dep_hash, b"0af5b42cc55ffb");
        assert_eq!(parts.macro_state_hash, b"d85fc71f180bdf74");
        let odd = split_object_name(b"a_b_0d99ae76451a_00000000000000_0000000000000000.o").unwrap();
        assert_eq!(odd.basename, b"a_b");
        assert_eq!(odd.dep_hash, b"00000000000000");
    }

    #[test]
    fn exe_names() {
        assert_eq!(
            split_exe_name(b"main_a1ef.exe"),
            Some((&b"main"[..], ExeSuffix::Exe))
        );
        assert_eq!(
            split_exe_name(b"libfoo.a_cc.a"),
            Some((&b"libfoo.a"[..], ExeSuffix::A))
        );
        assert_eq!(
            split_exe_name(b"libfoo.so_cc.so"),
            Some((&b"libfoo.so"[..], ExeSuffix::So))
        );
        assert_eq!(
            split_exe_name(b"my_tool_k.exe"),
            Some((&b"my_tool"[..], ExeSuffix::Exe))
        );
        assert_eq!(split_exe_name(b"x_.exe"), Some((&b"x"[..], ExeSuffix::Exe)));
        for bad in [
            &b"_k.exe"[..],
            b"nokey.exe",
            b".exe",
            b"main_k.exe.lock",
            b"main_k.exe.manifest",
            b"x.publish.tmp",
            b"main_k.EXE",
        ] {
            assert_eq!(split_exe_name(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
