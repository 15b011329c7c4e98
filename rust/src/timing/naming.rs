//! Span names (formats.md §3.2), kept identical to compiletools' exporter so that
//! existing dashboards and queries keep matching.

use super::model::Event;

/// Name of the root span.
pub const ROOT_SPAN_NAME: &str = "compiletools.build";

/// `phase.<name>` for a phase; `<rule_type>.<P>/<name>` for a rule, where P
/// is the last component of the directory of `source` (of `target` when
/// `source` is empty), and `<rule_type>.<name>` when P is empty.
pub fn span_name(event: &Event) -> String {
    let mut out = String::new();
    write_span_name(&mut out, event);
    out
}

/// [`span_name`] into a reused buffer (cleared first).
pub fn write_span_name(out: &mut String, event: &Event) {
    out.clear();
    let Some(rule_type) = event.rule_type() else {
        out.push_str("phase.");
        out.push_str(event.name());
        return;
    };
    let path = if event.source().is_empty() {
        event.target()
    } else {
        event.source()
    };
    let parent = parent_dir_name(path);
    out.push_str(rule_type);
    out.push('.');
    if !parent.is_empty() {
        out.push_str(parent);
        out.push('/');
    }
    out.push_str(event.name());
}

/// `os.path.basename(os.path.dirname(path))` of Python's posixpath, which
/// compiletools uses: `/foo.cpp` and `foo.cpp` give "", `a//b/c` gives "b",
/// and a trailing slash counts as an empty file name (`a/b/` gives "b").
///
/// Searched as bytes (`/` is ASCII, so every index found is a char
/// boundary): `str::rfind` with a `char` compares each candidate through a
/// `memcmp` call, a visible cost when done for every one of 100k spans.
pub fn parent_dir_name(path: &str) -> &str {
    let Some(slash) = memchr::memrchr(b'/', path.as_bytes()) else {
        return "";
    };
    // dirname keeps a head made only of slashes as is; otherwise it strips
    // trailing slashes.
    let head = &path.as_bytes()[..=slash];
    let dir_len = head.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
    let dir = &path[..dir_len];
    match memchr::memrchr(b'/', dir.as_bytes()) {
        Some(i) => &dir[i + 1..],
        None => dir,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::model::event_for_test;

    fn rule(rule_type: &str, name: &str, target: &str, source: &str) -> Event<'static> {
        let json = serde_json::json!({
            "name": name, "rule_type": rule_type, "target": target, "source": source
        });
        event_for_test(&json.to_string())
    }

    #[test]
    fn parent_dir_name_follows_posixpath() {
        assert_eq!(parent_dir_name("/home/dev/src/geom/src/geom/vec2.cpp"), "geom");
        assert_eq!(parent_dir_name("/foo.cpp"), "");
        assert_eq!(parent_dir_name("foo.cpp"), "");
        assert_eq!(parent_dir_name(""), "");
        assert_eq!(parent_dir_name("//foo.cpp"), "");
        assert_eq!(parent_dir_name("a/foo.cpp"), "a");
        assert_eq!(parent_dir_name("x/a//foo.cpp"), "a");
        assert_eq!(parent_dir_name("bin/dir/"), "dir");
        assert_eq!(
            parent_dir_name("bin/ccache-gcc.cxx17.debug/apps"),
            "ccache-gcc.cxx17.debug"
        );
        assert_eq!(parent_dir_name("/p/\u{e9}t\u{e9}/x.cpp"), "\u{e9}t\u{e9}");
    }

    /// The char-based reading this function replaced, kept as the oracle.
    fn parent_dir_name_by_chars(path: &str) -> &str {
        let Some(slash) = path.rfind('/') else {
            return "";
        };
        let dir = path[..=slash].trim_end_matches('/');
        match dir.rfind('/') {
            Some(i) => &dir[i + 1..],
            None => dir,
        }
    }

    proptest::proptest! {
        #[test]
        fn parent_dir_name_matches_the_char_reading(path in "[/a\u{e9}.]{0,12}") {
            proptest::prop_assert_eq!(parent_dir_name(&path), parent_dir_name_by_chars(&path));
        }
    }

    #[test]
    fn rule_and_phase_names() {
        assert_eq!(
            span_name(&rule(
                "compile",
                "helper.cpp",
                "/p/cas/0d/helper.o",
                "/p/util/helper.cpp"
            )),
            "compile.util/helper.cpp"
        );
        // No source: P comes from the target.
        assert_eq!(
            span_name(&rule("mkdir", "0d", "/p/cas-objdir/v/0d", "")),
            "mkdir.v/0d"
        );
        assert_eq!(
            span_name(&rule("compile", "foo.cpp", "/o/x.o", "/foo.cpp")),
            "compile.foo.cpp"
        );
        assert_eq!(
            span_name(&rule("compile", "foo.cpp", "/o/x.o", "foo.cpp")),
            "compile.foo.cpp"
        );
        assert_eq!(span_name(&rule("other", "", "", "")), "other.");
        let phase = event_for_test(r#"{"name": "build_execution"}"#);
        assert_eq!(span_name(&phase), "phase.build_execution");
    }
}
