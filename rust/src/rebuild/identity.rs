//! What identifies a rule from one build to the next.
//!
//! `ct.target` does not: in a CAS build it is the hashed object or
//! executable name (formats.md §6.3, §6.6), which changes exactly when the
//! rule runs again. So:
//! * a compile (`compile`, `header_unit`) is its source, the rule's first
//!   input (formats.md §2.5): one source makes one object per variant, and
//!   the history's scope is (host, variant);
//! * any other rule whose target is a CAS artefact — `<cell>/<2 hex>/<basename>_<key><suffix>`,
//!   and a test's `….exe[.<16 hex>].result` beside it — is the target with
//!   the shard and the key taken out: `<cell>/<basename><suffix>`;
//! * anything else is its target (native make, ninja and cmake outputs do
//!   not move).

use std::borrow::Cow;

use crate::cas::names::{is_hex_name, is_lower_hex, split_exe_name};

/// The identity of a rule of type `rule_type` with `target` and `source`.
pub fn stable_identity<'r>(rule_type: Option<&str>, target: &'r str, source: &'r str) -> Cow<'r, str> {
    if is_compile(rule_type) && !source.is_empty() {
        return Cow::Borrowed(source);
    }
    let mut out = String::new();
    if without_cas_key(target, &mut out) {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(target)
    }
}

fn is_compile(rule_type: Option<&str>) -> bool {
    matches!(rule_type, Some("compile" | "header_unit"))
}

/// [`stable_identity`] without an allocation per rule: a rewritten identity
/// is written into `scratch` (cleared first) and borrowed from it.
pub fn stable_identity_in<'r>(
    rule_type: Option<&str>,
    target: &'r str,
    source: &'r str,
    scratch: &'r mut String,
) -> &'r str {
    if is_compile(rule_type) && !source.is_empty() {
        return source;
    }
    scratch.clear();
    if without_cas_key(target, scratch) {
        scratch
    } else {
        target
    }
}

/// Writes `<cell>/<basename><suffix>[<rest>]` into `out` for a target in
/// an exe store's shard; false (and `out` unspecified) when it is not one.
fn without_cas_key(target: &str, out: &mut String) -> bool {
    let Some((dir, name)) = target.rsplit_once('/') else {
        return false;
    };
    let (cell, shard) = dir.rsplit_once('/').unwrap_or(("", dir));
    if !is_hex_name(shard.as_bytes(), 2) || shard.ends_with('\n') {
        return false;
    }
    let (artefact, rest) = split_result_marker(name);
    let Some((basename, suffix)) = split_exe_name(artefact.as_bytes()) else {
        return false;
    };
    // split_exe_name cut at an ASCII `_` and before an ASCII suffix, so
    // these are char boundaries.
    let (Some(basename), Some(key)) = (
        artefact.get(..basename.len()),
        artefact.get(basename.len() + 1..artefact.len() - suffix.as_bytes().len()),
    ) else {
        return false;
    };
    if key.is_empty() || !is_lower_hex(key.as_bytes()) {
        return false;
    }
    out.reserve(cell.len() + 1 + basename.len() + 4 + rest.len());
    out.push_str(cell);
    out.push('/');
    out.push_str(basename);
    out.push_str(std::str::from_utf8(suffix.as_bytes()).unwrap_or(""));
    out.push_str(rest);
    true
}

/// A test's success marker `<exe>.<16 hex>.result` or `<exe>.result`
/// (formats.md §6.6) as (`<exe>`, `.result`); any other name unchanged.
fn split_result_marker(name: &str) -> (&str, &str) {
    let Some(stem) = name.strip_suffix(".result") else {
        return (name, "");
    };
    let exe = match stem.rsplit_once('.') {
        Some((exe, keyed)) if is_hex_name(keyed.as_bytes(), 16) && !keyed.ends_with('\n') => exe,
        _ => stem,
    };
    (exe, ".result")
}

#[cfg(test)]
mod tests {
    use super::*;

    const CELL: &str = "/home/dev/src/geom/cas-exedir/ccache-gcc.cxx17.debug";
    const KEY: &str = "517764c217a1de59e45f7033be28cccb7bdd0ef19255299d3b6ede72119d918b";

    #[test]
    fn compiles_are_their_source() {
        let obj = "/p/cas-objdir/v/0c/stats_0c8d944aa09c_6622db1ec0945f_f542d280f7f88864.o";
        assert_eq!(
            stable_identity(Some("compile"), obj, "/p/src/stats.cpp"),
            "/p/src/stats.cpp"
        );
        assert_eq!(
            stable_identity(Some("header_unit"), "/x/vector.gcm", "<vector>"),
            "<vector>"
        );
        // Without a source: the target, as it is.
        assert_eq!(stable_identity(Some("compile"), "/o/a.o", ""), "/o/a.o");
    }

    #[test]
    fn cas_artefacts_lose_shard_and_key() {
        let exe = format!("{CELL}/51/geomtool_{KEY}.exe");
        assert_eq!(
            stable_identity(
                Some("link"),
                &exe,
                "/p/cas-objdir/v/89/geomtool_8971786a025a_56c46a60c4d0b9_980e031d8e676eb1.o"
            ),
            format!("{CELL}/geomtool.exe")
        );
        let result = format!("{CELL}/a9/test_vec_{KEY}.exe.e3b0c44298fc1c14.result");
        assert_eq!(
            stable_identity(Some("test"), &result, ""),
            format!("{CELL}/test_vec.exe.result")
        );
        let old_result = format!("{CELL}/a9/test_vec_{KEY}.exe.result");
        assert_eq!(
            stable_identity(Some("test"), &old_result, ""),
            format!("{CELL}/test_vec.exe.result")
        );
        let lib = format!("{CELL}/cc/libfoo.a_{KEY}.a");
        assert_eq!(
            stable_identity(Some("static_library"), &lib, ""),
            format!("{CELL}/libfoo.a.a")
        );
        // A symlink's user-facing target does not move.
        assert_eq!(
            stable_identity(Some("symlink"), "bin/v/apps/geomtool", &exe),
            "bin/v/apps/geomtool"
        );
    }

    #[test]
    fn the_scratch_form_gives_the_same_identities() {
        let mut scratch = String::from("left over");
        for (rule_type, target, source) in [
            (Some("compile"), "/o/a.o", "/s/a.cpp"),
            (Some("link"), "/x/ab/main_00ff.exe", ""),
            (Some("symlink"), "bin/v/main", "/x/ab/main_00ff.exe"),
            (None, "", ""),
        ] {
            let want = stable_identity(rule_type, target, source).into_owned();
            assert_eq!(stable_identity_in(rule_type, target, source, &mut scratch), want);
        }
    }

    #[test]
    fn other_targets_and_hostile_names_stay_as_they_are() {
        let long = "é".repeat(1 << 16);
        let long_target = format!("/x/ab/{long}_{KEY}.exe");
        for target in [
            "",
            "/",
            "main",
            "/p/build/util.o",
            "/p/ab/main.exe",             // no key
            "/p/ab/_00.exe",              // key but no basename
            "/p/AB/main_00.exe",          // upper-case shard
            "/p/abc/main_00.exe",         // not a shard
            "/p/ab/main_zz.exe",          // key not hex
            "/p/ab/main_00.exe.x.result", // marker key not 16 hex: `main_00.exe.x` is no artefact
            "ab/main_",
        ] {
            assert_eq!(stable_identity(Some("link"), target, ""), target, "{target:?}");
        }
        // Long names are rewritten in one copy, without a panic.
        let got = stable_identity(Some("link"), &long_target, "");
        assert_eq!(got.len(), "/x/".len() + long.len() + ".exe".len());
        // A shard at the very start.
        assert_eq!(stable_identity(Some("link"), "ab/main_00.exe", ""), "/main.exe");
    }
}
