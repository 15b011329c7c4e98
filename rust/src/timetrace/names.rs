//! ClangBuildAnalyzer's readings of names: normalised include paths, what
//! counts as a header, template argument collapsing, demangled function
//! names and the cut of long names in its report.

use std::borrow::Cow;

/// ClangBuildAnalyzer copies a path into a `FILENAME_MAX` buffer first.
const MAX_PATH_BYTES: usize = 4095;

/// A `Source` or `OptModule` path as ClangBuildAnalyzer shows it: `.` and
/// `..` segments resolved lexically and repeated or trailing slashes
/// dropped (Unix rules, as its path library uses on Linux), then
/// backslashes turned into slashes. `..` above a relative path's start is
/// kept, above `/` dropped; a relative path that resolves to nothing is `.`.
pub fn nice_path(path: &str) -> String {
    let path = cut_at_char_boundary(path, MAX_PATH_BYTES);
    let absolute = path.starts_with('/');
    let mut kept: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => match kept.last() {
                Some(&last) if last != ".." => {
                    kept.pop();
                }
                _ if absolute => {}
                _ => kept.push(".."),
            },
            _ => kept.push(segment),
        }
    }
    let mut out = String::with_capacity(path.len());
    if absolute {
        out.push('/');
    }
    for (i, segment) in kept.iter().enumerate() {
        if i > 0 {
            out.push('/');
        }
        out.push_str(segment);
    }
    if out.is_empty() && !path.is_empty() {
        out.push('.');
    }
    out.replace('\\', "/")
}

/// The part after the last `/`.
pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// ClangBuildAnalyzer's guess: a file name without an extension (`<vector>`)
/// or with one starting with `h` or `i` (`.h`, `.hpp`, `.inc`, `.ipp`).
pub fn is_header(path: &str) -> bool {
    let name = file_name(path);
    match name.rfind('.') {
        None => true,
        Some(dot) => matches!(name.as_bytes().get(dot + 1), Some(b'h' | b'H' | b'i' | b'I')),
    }
}

/// A template name with each outermost argument list replaced by `$`:
/// `std::vector<int>::push_back` → `std::vector<$>::push_back`. Names with
/// `operator` in them are left alone (their `<` and `>` are not brackets),
/// and so is a name whose brackets do not close — except that a name
/// ending in `<` gets its `$`, as in ClangBuildAnalyzer.
pub fn collapse_template_args(name: &str) -> Cow<'_, str> {
    if name.contains("operator") {
        return Cow::Borrowed(name);
    }
    let bytes = name.as_bytes();
    let mut out = String::with_capacity(name.len());
    let mut pos = 0;
    while let Some(offset) = memchr::memchr(b'<', &bytes[pos..]) {
        let args = pos + offset + 1;
        out.push_str(&name[pos..args]);
        out.push('$');
        let mut open = 1usize;
        let mut close = None;
        for (i, &b) in bytes.iter().enumerate().skip(args) {
            match b {
                b'<' => open += 1,
                b'>' => {
                    open -= 1;
                    if open == 0 {
                        close = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        match close {
            Some(close) => pos = close,
            None if args == bytes.len() => return Cow::Owned(out),
            None => return Cow::Borrowed(name),
        }
    }
    out.push_str(&name[pos..]);
    Cow::Owned(out)
}

/// An `OptFunction` detail demangled, as ClangBuildAnalyzer shows it.
///
/// ClangBuildAnalyzer uses LLVM's demangler; this uses `cpp_demangle`,
/// which prints Itanium names the way GNU `c++filt` does. The two agree on
/// ordinary names, and differ:
/// * in a few spellings: LLVM writes lambdas `'lambda'(int)` where this
///   writes `{lambda(int)#1}`;
/// * on a constructor or destructor with template arguments, whose first
///   parameter `cpp_demangle` 0.5 takes for a return type and drops
///   (its issue 129): `_Storage<$>(geom::Polygon&&)` for LLVM's
///   `_Storage<$>(std::in_place_t, geom::Polygon&&)`;
/// * on an empty parameter pack, which `cpp_demangle` prints as an empty
///   list element (`f<int, >(int, )`, its issue 132): those are dropped
///   here, giving LLVM's `f<int>(int)`.
///
/// Names that are not Itanium-mangled (1 to 4 `_` then `Z`) are kept as
/// they are: ClangBuildAnalyzer would try Microsoft demangling on those,
/// which only applies to MSVC-ABI traces.
pub fn demangle(name: &str) -> Cow<'_, str> {
    if !is_itanium_encoding(name) {
        return Cow::Borrowed(name);
    }
    match cpp_demangle::Symbol::new(name.as_bytes()).map(|s| s.demangle()) {
        Ok(Ok(demangled)) => Cow::Owned(drop_empty_list_elements(demangled)),
        _ => Cow::Borrowed(name),
    }
}

/// `a, )` → `a)`, `a, >` → `a>`, `a, , b` → `a, b`, `(, a` → `(a`.
fn drop_empty_list_elements(s: String) -> String {
    if !s.contains(", )")
        && !s.contains(", >")
        && !s.contains(", , ")
        && !s.contains("(, ")
        && !s.contains("<, ")
    {
        return s;
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s.as_str();
    while let Some(at) = rest.find(", ") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let empty_before = out.ends_with('(') || out.ends_with('<');
        let empty_after = after.starts_with(')') || after.starts_with('>') || after.starts_with(',');
        if !empty_before && !empty_after {
            out.push_str(", ");
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

fn is_itanium_encoding(name: &str) -> bool {
    let underscores = name.bytes().take_while(|&b| b == b'_').count();
    (1..=4).contains(&underscores) && name.as_bytes().get(underscores) == Some(&b'Z')
}

/// A name longer than `max` bytes cut to `max - 2` bytes and `...`, as in
/// ClangBuildAnalyzer's report (a cut inside a UTF-8 character moves back
/// to its start).
pub fn shorten(name: &str, max: usize) -> Cow<'_, str> {
    if name.len() <= max {
        return Cow::Borrowed(name);
    }
    let mut cut = cut_at_char_boundary(name, max.saturating_sub(2)).to_owned();
    cut.push_str("...");
    Cow::Owned(cut)
}

fn cut_at_char_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_path_resolves_dots_like_the_corpus() {
        assert_eq!(
            nice_path("/usr/bin/../lib/gcc/x86_64-linux-gnu/12/../../../../include/c++/12/cmath"),
            "/usr/include/c++/12/cmath"
        );
        assert_eq!(nice_path("/a//b/./c/"), "/a/b/c");
        assert_eq!(nice_path("/../a"), "/a");
        assert_eq!(nice_path("../a/../../b"), "../../b");
        assert_eq!(nice_path("a/.."), ".");
        assert_eq!(nice_path(""), "");
        assert_eq!(nice_path("/"), "/");
        assert_eq!(nice_path("c:\\x\\y.h"), "c:/x/y.h");
    }

    #[test]
    fn headers_by_extension() {
        assert!(is_header("/usr/include/c++/12/vector"));
        assert!(is_header("a/b.hpp"));
        assert!(is_header("a/b.INC"));
        assert!(is_header("x.ipp"));
        assert!(!is_header("a.h/b.cpp"));
        assert!(!is_header("b.cc"));
        assert!(!is_header("b."));
    }

    #[test]
    fn collapses_outer_template_arguments() {
        assert_eq!(
            collapse_template_args("std::vector<geom::Vec2>::push_back"),
            "std::vector<$>::push_back"
        );
        assert_eq!(
            collapse_template_args("std::basic_string<char>::_M_construct<const char *>"),
            "std::basic_string<$>::_M_construct<$>"
        );
        assert_eq!(collapse_template_args("a<b<c>, d>"), "a<$>");
        assert_eq!(collapse_template_args("plain"), "plain");
        assert_eq!(
            collapse_template_args("std::operator+<char>"),
            "std::operator+<char>"
        );
        assert_eq!(collapse_template_args("broken<a<b>"), "broken<a<b>");
        assert_eq!(collapse_template_args("ends<"), "ends<$");
        assert_eq!(collapse_template_args("a>b<c>"), "a>b<$>");
    }

    #[test]
    fn demangles_itanium_names_only() {
        assert_eq!(demangle("_ZN8testutil11unit_squareEv"), "testutil::unit_square()");
        assert_eq!(
            demangle("_ZN5stats4meanERKSt6vectorIdSaIdEE"),
            "stats::mean(std::vector<double, std::allocator<double> > const&)"
        );
        assert_eq!(demangle("__clang_call_terminate"), "__clang_call_terminate");
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_Z"), "_Z");
        assert_eq!(demangle("_____Zfoo"), "_____Zfoo");
        // An empty pack, as LLVM and c++filt print it.
        assert_eq!(
            demangle("_ZN9__gnu_cxx6__stoaIddcJEEET0_PFT_PKT1_PPS3_DpT2_EPKcS5_PmS9_"),
            "double __gnu_cxx::__stoa<double, double, char>(double (*)(char const*, char**), char const*, char const*, unsigned long*)"
        );
        assert_eq!(demangle("_Z1fIiJEEvT_DpT0_"), "void f<int>(int)");
        assert_eq!(demangle("_Z1fIJEiEvDpT_T0_"), "void f<int>(int)");
        assert_eq!(drop_empty_list_elements("f<a, , b>(, x, )".into()), "f<a, b>(x)");
    }

    #[test]
    fn shortens_to_max_minus_two_and_dots() {
        assert_eq!(shorten("abcdef", 6), "abcdef");
        assert_eq!(shorten("abcdefg", 6), "abcd...");
        assert_eq!(shorten("ab\u{e9}def", 4), "ab...");
        assert_eq!(shorten("\u{e9}\u{e9}\u{e9}", 4), "\u{e9}...");
    }
}
