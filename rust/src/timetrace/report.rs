//! The rollup's result, and its text in ClangBuildAnalyzer's `--analyze`
//! layout (without colours, its first "Analyzing build trace" line and its
//! closing "done in" line).

use std::fmt::{self, Write};

use super::names::{file_name, shorten};

/// How many of each list are reported, and the other knobs of
/// ClangBuildAnalyzer's `ClangBuildAnalyzer.ini`; the defaults are its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollupConfig {
    pub file_parse_count: usize,
    pub file_codegen_count: usize,
    pub template_count: usize,
    pub function_count: usize,
    pub header_count: usize,
    /// Include chains shown per header: one more than this is shown, then `...`.
    pub header_chain_count: usize,
    /// A file's frontend or backend shorter than this is not listed (it is
    /// still in the totals).
    pub min_file_ms: i64,
    pub max_name_length: usize,
    /// Headers that no source file includes directly are not listed.
    pub only_root_headers: bool,
}

impl Default for RollupConfig {
    fn default() -> Self {
        Self {
            file_parse_count: 10,
            file_codegen_count: 10,
            template_count: 30,
            function_count: 30,
            header_count: 10,
            header_chain_count: 5,
            min_file_ms: 10,
            max_name_length: 70,
            only_root_headers: true,
        }
    }
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TimeSummary {
    /// `Frontend` events counted (after merging a TU's extra ones).
    pub compilations: u64,
    pub frontend_us: i64,
    pub backend_us: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileTime {
    /// The TU's name as given to the rollup (or the detail of its
    /// `ExecuteCompiler`, `Frontend` or `Backend`, when clang wrote one).
    pub name: String,
    pub us: i64,
}

/// A template (or set, or function set) with its instantiation count and
/// total time. `name` is whole; the text cuts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedTime {
    pub name: String,
    pub count: u64,
    pub us: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionTime {
    /// Demangled.
    pub name: String,
    /// The TU's source file (`OptModule`'s detail).
    pub file: String,
    pub us: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncludeChain {
    /// The headers through which it was included, outermost first; empty
    /// for a direct include from the source file.
    pub via: Vec<String>,
    pub count: u64,
    pub us: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderTime {
    pub path: String,
    /// Inclusive parse time over every inclusion.
    pub us: i64,
    pub count: u64,
    /// The most frequent chains, at most `header_chain_count + 1`.
    pub chains: Vec<IncludeChain>,
    /// More chains than `header_chain_count` exist (ClangBuildAnalyzer's `...`).
    pub more_chains: bool,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    pub config: RollupConfig,
    pub summary: TimeSummary,
    pub parse_files: Vec<FileTime>,
    pub codegen_files: Vec<FileTime>,
    pub templates: Vec<NamedTime>,
    pub template_sets: Vec<NamedTime>,
    pub functions: Vec<FunctionTime>,
    pub function_sets: Vec<NamedTime>,
    pub headers: Vec<HeaderTime>,
}

/// ClangBuildAnalyzer's milliseconds: truncated, not rounded.
fn ms(us: i64) -> i64 {
    us / 1000
}

impl Report {
    fn write_files(&self, out: &mut impl Write, title: &str, files: &[FileTime]) -> fmt::Result {
        if files.is_empty() {
            return Ok(());
        }
        writeln!(out, "**** {title}:")?;
        for f in files {
            writeln!(out, "{:6} ms: {}", ms(f.us), f.name)?;
        }
        writeln!(out)
    }

    fn write_named(&self, out: &mut impl Write, title: &str, list: &[NamedTime]) -> fmt::Result {
        writeln!(out, "**** {title}:")?;
        for t in list {
            let total = ms(t.us);
            writeln!(
                out,
                "{:6} ms: {} ({} times, avg {} ms)",
                total,
                shorten(&t.name, self.config.max_name_length),
                t.count,
                total / t.count.max(1) as i64
            )?;
        }
        writeln!(out)
    }

    fn write_headers(&self, out: &mut impl Write) -> fmt::Result {
        if self.headers.is_empty() {
            return Ok(());
        }
        writeln!(out, "**** Expensive headers:")?;
        for h in &self.headers {
            let total = ms(h.us);
            writeln!(
                out,
                "{} ms: {} (included {} times, avg {} ms), included via:",
                total,
                h.path,
                h.count,
                total / h.count.max(1) as i64
            )?;
            for chain in &h.chains {
                write!(out, "  {}x: ", chain.count)?;
                if chain.via.is_empty() {
                    write!(out, "<direct include>")?;
                }
                for file in &chain.via {
                    write!(out, "{} ", file_name(file))?;
                }
                writeln!(out)?;
            }
            if h.more_chains {
                writeln!(out, "  ...")?;
            }
            writeln!(out)?;
        }
        Ok(())
    }
}

impl fmt::Display for Report {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.summary;
        if s.frontend_us != 0 || s.backend_us != 0 {
            writeln!(out, "**** Time summary:")?;
            writeln!(out, "Compilation ({} times):", s.compilations)?;
            writeln!(
                out,
                "  Parsing (frontend):        {:7.1} s",
                s.frontend_us as f64 / 1e6
            )?;
            writeln!(
                out,
                "  Codegen & opts (backend):  {:7.1} s",
                s.backend_us as f64 / 1e6
            )?;
            writeln!(out)?;
        }
        self.write_files(
            out,
            "Files that took longest to parse (compiler frontend)",
            &self.parse_files,
        )?;
        self.write_files(
            out,
            "Files that took longest to codegen (compiler backend)",
            &self.codegen_files,
        )?;
        if !self.templates.is_empty() {
            self.write_named(out, "Templates that took longest to instantiate", &self.templates)?;
            self.write_named(
                out,
                "Template sets that took longest to instantiate",
                &self.template_sets,
            )?;
        }
        if !self.functions.is_empty() {
            writeln!(out, "**** Functions that took longest to compile:")?;
            for f in &self.functions {
                let name = shorten(&f.name, self.config.max_name_length);
                writeln!(out, "{:6} ms: {} ({})", ms(f.us), name, f.file)?;
            }
            writeln!(out)?;
            self.write_named(
                out,
                "Function sets that took longest to compile / optimize",
                &self.function_sets,
            )?;
        }
        self.write_headers(out)
    }
}
