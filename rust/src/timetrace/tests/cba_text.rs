//! ClangBuildAnalyzer's `--analyze` text read back into its parts, so that
//! its output and the rollup's can be compared list by list.

/// One listed thing: its milliseconds and the rest of its line (for a
/// header, its include-chain lines too, one per line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub ms: i64,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub title: String,
    pub entries: Vec<Entry>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Analysis {
    pub compilations: Option<u64>,
    /// As printed: seconds with one decimal.
    pub frontend_s: Option<String>,
    pub backend_s: Option<String>,
    pub sections: Vec<Section>,
}

impl Analysis {
    pub fn section(&self, title: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.title == title)
    }
}

pub fn parse(text: &str) -> Analysis {
    let mut out = Analysis::default();
    let mut current: Option<Section> = None;
    for line in text.lines() {
        if let Some(title) = line.strip_prefix("**** ") {
            out.sections.extend(current.take());
            let title = title.strip_suffix(':').unwrap_or(title).to_owned();
            current = Some(Section {
                title,
                entries: Vec::new(),
            });
            continue;
        }
        if let Some(n) = line
            .strip_prefix("Compilation (")
            .and_then(|r| r.strip_suffix(" times):"))
        {
            out.compilations = n.parse().ok();
            continue;
        }
        if let Some(v) = line.trim_start().strip_prefix("Parsing (frontend):") {
            out.frontend_s = Some(v.trim().trim_end_matches(" s").trim().to_owned());
            continue;
        }
        if let Some(v) = line.trim_start().strip_prefix("Codegen & opts (backend):") {
            out.backend_s = Some(v.trim().trim_end_matches(" s").trim().to_owned());
            continue;
        }
        let Some(section) = current.as_mut() else {
            continue;
        };
        if let Some((ms, rest)) = line.trim_start().split_once(" ms: ") {
            if let Ok(ms) = ms.trim().parse() {
                section.entries.push(Entry {
                    ms,
                    text: rest.to_owned(),
                });
                continue;
            }
        }
        // An include chain ("  3x: a.hpp b.hpp ", "  ...") belongs to the
        // header above it.
        if line.starts_with("  ") && !line.trim().is_empty() && !line.trim_start().starts_with("done in") {
            if let Some(last) = section.entries.last_mut() {
                last.text.push('\n');
                last.text.push_str(line);
            }
        }
    }
    out.sections.extend(current);
    out
}

#[test]
fn reads_every_part() {
    let text = "Analyzing build trace from 'cba.bin'...\n**** Time summary:\nCompilation (29 times):\n  \
                Parsing (frontend):            4.9 s\n  Codegen & opts (backend):      0.3 s\n\n**** Files that \
                took longest to parse (compiler frontend):\n   433 ms: a.json\n    34 ms: b.json\n\n**** Expensive \
                headers:\n1232 ms: /x/cmath (included 12 times, avg 102 ms), included via:\n  9x: <direct \
                include>\n  3x: unit_test.hpp \n\n  done in 0.0s.\n";
    let a = parse(text);
    assert_eq!(a.compilations, Some(29));
    assert_eq!(a.frontend_s.as_deref(), Some("4.9"));
    assert_eq!(a.backend_s.as_deref(), Some("0.3"));
    assert_eq!(a.sections.len(), 3);
    assert_eq!(a.sections[0].title, "Time summary");
    let files = a
        .section("Files that took longest to parse (compiler frontend)")
        .map(|s| s.entries.clone());
    assert_eq!(
        files,
        Some(vec![
            Entry {
                ms: 433,
                text: "a.json".into()
            },
            Entry {
                ms: 34,
                text: "b.json".into()
            }
        ])
    );
    let headers = &a.sections[2].entries;
    assert_eq!(headers.len(), 1);
    assert_eq!(
        headers[0].text,
        "/x/cmath (included 12 times, avg 102 ms), included via:\n  9x: <direct include>\n  3x: unit_test.hpp "
    );
}
