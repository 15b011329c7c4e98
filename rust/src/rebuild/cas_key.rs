//! The cache key an object's name carries (formats.md §6.3), as numbers.

use crate::cas::names::split_object_name;

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
        let name = target.rsplit('/').next().unwrap_or(target);
        let parts = split_object_name(name.as_bytes())?;
        Some(CasKey {
            file_hash: hex_u64(parts.file_hash)?,
            dep_hash: hex_u64(parts.dep_hash)?,
            macro_state_hash: hex_u64(parts.macro_state_hash)?,
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
fn hex_u64(digits: &[u8]) -> Option<u64> {
    if digits.len() > 16 {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, &d| {
        let v = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            _ => return None,
        };
        Some(acc << 4 | u64::from(v))
    })
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
