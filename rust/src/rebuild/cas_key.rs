//! The cache key an object's name carries (formats.md §6.3), as numbers.

use crate::cas::names::{HEX_VALUE, NOT_HEX, OBJ_TAIL_LEN};

/// `file_hash`, `dep_hash` and `macro_state_hash` of one CAS object name:
/// 48, 56 and 64 bits of hex, held as numbers (24 bytes, not 42 of text;
/// the history keeps two per source).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CasKey {
    pub file_hash: u64,
    pub dep_hash: u64,
    pub macro_state_hash: u64,
}

impl CasKey {
    /// The key of `target` when its last path component is a CAS object
    /// name; `None` for anything else (another backend's object, a link).
    pub fn of_target(target: &str) -> Option<CasKey> {
        let bytes = target.as_bytes();
        // Cheap refusal first: most targets that are not objects fail here.
        if !bytes.ends_with(b".o") {
            return None;
        }
        let name = memchr::memrchr(b'/', bytes).map_or(bytes, |i| &bytes[i + 1..]);
        // The shape of `split_object_name`, with the digits checked once,
        // while they are read (`hex_u64`), not twice.
        let tail = name.len().checked_sub(OBJ_TAIL_LEN).filter(|&b| b > 0)?;
        let (basename, t) = name.split_at(tail);
        let separators = [t[0], t[13], t[28]] == [b'_'; 3] && &t[45..] == b".o";
        if !separators || memchr::memchr(b'\n', basename).is_some() {
            return None;
        }
        Some(CasKey {
            file_hash: hex_u64(&t[1..13])?,
            dep_hash: hex_u64(&t[14..28])?,
            macro_state_hash: hex_u64(&t[29..45])?,
        })
    }

    /// The three hashes as compiletools writes them (12, 14, 16 hex digits).
    pub fn to_hex(&self) -> (String, String, String) {
        (
            format!("{:012x}", self.file_hash),
            format!("{:014x}", self.dep_hash),
            format!("{:016x}", self.macro_state_hash),
        )
    }
}

/// At most 16 lower-case hex digits as a number (the name filter already
/// checked the digits; this checks again rather than trust it).
pub(super) fn hex_u64(digits: &[u8]) -> Option<u64> {
    if digits.len() > 16 {
        return None;
    }
    // Branch-free (see `HEX_VALUE`): the validity is checked once at the end.
    let (mut acc, mut bad) = (0u64, 0u8);
    for &d in digits {
        let v = HEX_VALUE[usize::from(d)];
        bad |= v;
        acc = acc << 4 | u64::from(v & 0x0f);
    }
    (bad & NOT_HEX == 0).then_some(acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answer_from_a_real_store() {
        // corpus case 04, cas-listing.txt
        let key = CasKey::of_target(
            "/home/dev/src/geom/cas-objdir/ccache-gcc.cxx17.debug/0c/stats_0c8d944aa09c_6622db1ec0945f_f542d280f7f88864.o",
        )
        .unwrap();
        assert_eq!(key.file_hash, 0x0c8d944aa09c);
        assert_eq!(key.dep_hash, 0x6622db1ec0945f);
        assert_eq!(key.macro_state_hash, 0xf542d280f7f88864);
        assert_eq!(
            key.to_hex(),
            (
                "0c8d944aa09c".to_owned(),
                "6622db1ec0945f".to_owned(),
                "f542d280f7f88864".to_owned()
            )
        );
        // A bare name and the no-header dep hash.
        let bare = CasKey::of_target("a_000000000001_00000000000000_0000000000000000.o").unwrap();
        assert_eq!((bare.file_hash, bare.dep_hash, bare.macro_state_hash), (1, 0, 0));
    }

    /// The same names as the CAS scanner's parser, which implements the
    /// regex of formats.md §6.3.
    #[test]
    fn agrees_with_the_scanner_s_name_parser() {
        use crate::cas::names::split_object_name;
        let names: [&[u8]; 8] = [
            b"helper_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.o",
            b"_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.o",
            b"h_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf7g.o",
            b"h_0d99ae76451a-0af5b42cc55ffb_d85fc71f180bdf74.o",
            b"h_0d99ae76451a_0af5b42cc55ffb-d85fc71f180bdf74.o",
            b"h\n_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.o",
            b"h_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.oo",
            b"a_b_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.o",
        ];
        for name in names {
            let text = std::str::from_utf8(name).unwrap();
            assert_eq!(
                CasKey::of_target(text).is_some(),
                split_object_name(name).is_some(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn hostile_and_foreign_names_are_not_keys() {
        let long = "x".repeat(1 << 20);
        for target in [
            "",
            "/",
            "main.o",
            "/p/build/obj/util.o",
            "/p/cas-exedir/v/51/geomtool_517764c217a1de59e45f7033be28cccb7bdd0ef19255299d3b6ede72119d918b.exe",
            "stats_0C8D944AA09C_6622db1ec0945f_f542d280f7f88864.o",
            "stats_0c8d944aa09c_6622db1ec0945f_f542d280f7f88864.o/",
            "_0c8d944aa09c_6622db1ec0945f_f542d280f7f88864.o",
            "a\nb_0c8d944aa09c_6622db1ec0945f_f542d280f7f88864.o",
            "ü_0c8d944aa09c_6622db1ec0945f_f542d280f7f8886é.o",
            long.as_str(),
        ] {
            assert_eq!(CasKey::of_target(target), None, "{:?}", &target[..target.len().min(60)]);
        }
        // A long basename is fine and costs nothing more than its scan.
        let named = format!("{long}_0c8d944aa09c_6622db1ec0945f_f542d280f7f88864.o");
        assert!(CasKey::of_target(&named).is_some());
        assert_eq!(hex_u64(b"fffffffffffffffff"), None);
        assert_eq!(hex_u64(b""), Some(0));
    }
}
