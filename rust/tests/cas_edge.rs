//! Hand-made stores for the rules and edge cases of formats.md §6.2–§6.8, each
//! with exact expected numbers. Where the scan deliberately differs from
//! compiletools, the test says what compiletools does.

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use compiletools_core::cas::{
    scan_store, scan_store_with, Anomalies, AnomalyKind, CasKind, ScanLimits, StoreStats,
};
use compiletools_core::{CancelToken, Error};

use crate::unprivileged;

// ------------------------------------------------------------------ helpers

/// A sparse file of `size` bytes (parents created).
fn touch(path: &Path, size: u64) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::File::create(path).unwrap().set_len(size).unwrap();
}

fn write(path: &Path, content: &[u8]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

fn scan(kind: CasKind, cell: &Path) -> StoreStats {
    scan_store(kind, cell, &CancelToken::new()).unwrap_or_else(|e| panic!("scan {}: {e}", cell.display()))
}

/// (total_bytes, total_entries, unique_buckets, wasted_bytes, duplicate_groups)
fn five(s: &StoreStats) -> (u64, u64, u64, u64, u64) {
    (
        s.total_bytes,
        s.total_entries,
        s.unique_buckets,
        s.wasted_bytes,
        s.duplicate_groups,
    )
}

struct Cell {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    cell: PathBuf,
}

impl Cell {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let cell = root.join("cas").join("gcc.cxx20.debug");
        fs::create_dir_all(&cell).unwrap();
        Self {
            _tmp: tmp,
            root,
            cell,
        }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.cell.join(rel)
    }
}

/// An object name with the given basename, hash pair and macro hash.
fn obj(basename: &str, file: &str, dep: &str, mac: &str) -> String {
    assert_eq!((file.len(), dep.len(), mac.len()), (12, 14, 16));
    format!("{basename}_{file}_{dep}_{mac}.o")
}

const F1: &str = "0d99ae76451a";
const D1: &str = "0af5b42cc55ffb";
const F2: &str = "71d46a082188";
const M1: &str = "d85fc71f180bdf74";
const M2: &str = "1111111111111111";
const M3: &str = "2222222222222222";

/// The 64-hex link key of the spec's exe example.
const LK1: &str = "a1ef00000000000000000000000000000000000000000000000000000000007e";
const LK2: &str = "a1ff00000000000000000000000000000000000000000000000000000000007e";

// --------------------------------------------------------- missing / empty

#[test]
fn missing_cell_is_distinct_from_empty() {
    let c = Cell::new();
    let missing = scan(CasKind::Obj, &c.root.join("nope"));
    assert!(!missing.exists);
    assert_eq!(five(&missing), (0, 0, 0, 0, 0));
    assert!(missing.warnings.is_empty());

    for kind in [CasKind::Obj, CasKind::Pch, CasKind::Pcm, CasKind::Exe] {
        let empty = scan(kind, &c.cell);
        assert!(empty.exists, "{kind}");
        assert_eq!(five(&empty), (0, 0, 0, 0, 0), "{kind}");
        assert_eq!(empty.anomalies, Anomalies::default());
    }
}

#[test]
fn cell_that_is_a_file_is_missing_with_a_warning() {
    let c = Cell::new();
    let file = c.root.join("file");
    touch(&file, 10);
    let s = scan(CasKind::Pch, &file);
    assert!(!s.exists);
    assert_eq!(five(&s), (0, 0, 0, 0, 0));
    assert_eq!(s.warnings.len(), 1);
    assert_eq!(s.warnings[0].kind, AnomalyKind::CellNotDirectory);
    // a path through a file (ENOTDIR) is simply missing
    assert!(!scan(CasKind::Obj, &file.join("sub")).exists);
}

#[test]
fn symlinked_cell_is_followed_like_os_path_isdir() {
    let c = Cell::new();
    touch(&c.p(&format!("0d/{}", obj("a", F1, D1, M1))), 10);
    let link = c.root.join("link");
    symlink(&c.cell, &link).unwrap();
    assert_eq!(five(&scan(CasKind::Obj, &link)), (10, 1, 1, 0, 0));
}

#[test]
fn cancelled_token_stops_the_scan() {
    let c = Cell::new();
    let cancel = CancelToken::new();
    cancel.cancel();
    assert!(matches!(
        scan_store(CasKind::Obj, &c.cell, &cancel),
        Err(Error::Cancelled)
    ));
}

// ----------------------------------------------------------------------- obj

#[test]
fn obj_three_variant_group_and_basename_not_in_key() {
    // formats.md §6.7 example: sizes 100, 150, 120 → wasted 270.
    let c = Cell::new();
    touch(&c.p(&format!("0d/{}", obj("foo", F1, D1, M1))), 100);
    touch(&c.p(&format!("0d/{}", obj("foo", F1, D1, M2))), 150);
    // another basename with the same (file_hash, dep_hash): same group
    touch(&c.p(&format!("0d/{}", obj("foo_renamed", F1, D1, M3))), 120);
    // a singleton; the shard is not checked against the hash
    touch(&c.p(&format!("ff/{}", obj("bar", F2, D1, M1))), 7);
    let s = scan(CasKind::Obj, &c.cell);
    assert_eq!(five(&s), (377, 4, 2, 270, 1));
    assert_eq!(s.anomalies, Anomalies::default());
}

#[test]
fn obj_name_filters_locks_temps_and_layout() {
    let c = Cell::new();
    let o = obj("helper", F1, D1, M1);
    touch(&c.p(&format!("0d/{o}")), 1000);
    // sidecars and temps of the same object: all excluded
    for sidecar in [
        ".lock",
        ".lock.excl",
        ".12345.ab12.tmp",
        ".compiletools.tmp",
        ".compiletools.tmp.7",
    ] {
        touch(&c.p(&format!("0d/{o}{sidecar}")), 50);
    }
    fs::create_dir_all(c.p(&format!("0d/{o}.lockdir"))).unwrap();
    // names that do not match the entry rule
    touch(&c.p(&format!("0d/{}", obj("x", "0D99AE76451A", D1, M1))), 50); // upper-case hash
    touch(&c.p("0d/_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.o"), 50); // empty basename
    touch(&c.p("0d/notes.txt"), 50);
    // wrong top level: upper-case / non-hex / 3-char shards, top-level objects, state files
    touch(&c.p(&format!("0D/{o}")), 50);
    touch(&c.p(&format!("zz/{o}")), 50);
    touch(&c.p(&format!("0d0/{o}")), 50);
    touch(&c.p(&o), 50);
    touch(&c.p(".ct-traces.json"), 50);
    touch(&c.p(".ct-rule-costs.json"), 50);
    // nested deeper than documented
    touch(&c.p(&format!("0d/sub/{}", obj("deep", F2, D1, M1))), 50);
    let s = scan(CasKind::Obj, &c.cell);
    assert_eq!(five(&s), (1000, 1, 1, 0, 0));
    assert_eq!(s.anomalies, Anomalies::default());
}

#[test]
fn obj_shard_name_with_trailing_newline_counts_like_python_dollar() {
    // re.match(r"^[0-9a-f]{2}$", "0d\n") matches in Python.
    let c = Cell::new();
    touch(&c.p(&format!("0d\n/{}", obj("a", F1, D1, M1))), 10);
    touch(&c.p(&format!("0d\n\n/{}", obj("b", F2, D1, M1))), 20);
    assert_eq!(five(&scan(CasKind::Obj, &c.cell)), (10, 1, 1, 0, 0));
}

#[test]
fn obj_non_utf8_basename_counts() {
    let c = Cell::new();
    let mut name = b"\xff\xfe".to_vec();
    name.extend_from_slice(format!("_{F1}_{D1}_{M1}.o").as_bytes());
    let path = c.p("0d").join(std::ffi::OsStr::from_bytes(&name));
    touch(&path, 33);
    assert_eq!(five(&scan(CasKind::Obj, &c.cell)), (33, 1, 1, 0, 0));
}

#[test]
fn obj_symlinked_shard_is_ignored() {
    let c = Cell::new();
    let outside = c.root.join("outside");
    touch(&outside.join(obj("a", F1, D1, M1)), 10);
    symlink(&outside, c.p("0d")).unwrap();
    touch(&c.p(&format!("71/{}", obj("b", F2, D1, M1))), 20);
    let s = scan(CasKind::Obj, &c.cell);
    assert_eq!(five(&s), (20, 1, 1, 0, 0));
    assert_eq!(s.anomalies.symlinked_dirs_ignored, 1);
}

#[test]
fn obj_symlink_in_shard_counts_target_size_broken_one_skipped() {
    // Parity with compiletools' DirEntry.stat() (follows symlinks).
    let c = Cell::new();
    let target = c.root.join("elsewhere.o");
    touch(&target, 5000);
    touch(&c.p(&format!("0d/{}", obj("real", F1, D1, M1))), 100);
    symlink(&target, c.p(&format!("0d/{}", obj("link", F1, D1, M2)))).unwrap();
    symlink(
        c.root.join("does-not-exist"),
        c.p(&format!("0d/{}", obj("broken", F1, D1, M3))),
    )
    .unwrap();
    let s = scan(CasKind::Obj, &c.cell);
    // 100 + 5000 in one group: wasted = 5100 − 100
    assert_eq!(five(&s), (5100, 2, 1, 5000, 1));
    assert_eq!(s.anomalies.obj_symlinks_followed, 1);
    assert_eq!(s.anomalies.stat_failures, 1);
    let kinds: Vec<AnomalyKind> = s.warnings.iter().map(|w| w.kind).collect();
    assert!(
        kinds.contains(&AnomalyKind::ObjSymlinkFollowed) && kinds.contains(&AnomalyKind::StatFailed),
        "{kinds:?}"
    );
}

#[test]
fn obj_directory_named_like_an_object_counts_with_its_size() {
    // Decision: parity. compiletools counts it with the directory's st_size
    // (formats.md §6.8 allows ignoring it; design.md §5 asks for identical numbers).
    // It is counted in `obj_directories_counted` and warned about.
    let c = Cell::new();
    let dir = c.p(&format!("0d/{}", obj("weird", F1, D1, M1)));
    fs::create_dir_all(&dir).unwrap();
    touch(&dir.join("inner.o"), 999); // nothing inside it is looked at
    let dir_size = fs::metadata(&dir).unwrap().len();
    let s = scan(CasKind::Obj, &c.cell);
    assert_eq!(five(&s), (dir_size, 1, 1, 0, 0));
    assert_eq!(s.anomalies.obj_directories_counted, 1);
}

// ------------------------------------------------------------------ pch/pcm

fn pch_manifest(header: &str) -> Vec<u8> {
    format!(
        r#"{{"compiler": "g++", "compiler_identity": "/usr/bin/g++-12|1305592|1744025177000000000", "header_realpath": "{header}", "transitive_hashes": {{}}}}"#
    )
    .into_bytes()
}

#[test]
fn pch_sizes_include_every_regular_file_and_only_those() {
    let c = Cell::new();
    let d = "56dff7d27b514966";
    // The spec's observed entry: gch + staged header + manifest + lock.
    touch(&c.p(&format!("{d}/big.hpp.gch")), 29_787_480);
    touch(&c.p(&format!("{d}/big.hpp")), 49);
    let manifest = pch_manifest("/p/util/big.hpp");
    write(&c.p(&format!("{d}/manifest.json")), &manifest);
    touch(&c.p(&format!("{d}/big.hpp.gch.lock")), 0);
    let base = 29_787_480 + 49 + manifest.len() as u64;
    // temps are included too (parity: no name filter in pch/pcm)
    touch(&c.p(&format!("{d}/manifest.json.tmp.123")), 7);
    touch(&c.p(&format!("{d}/big.hpp.gch.compiletools.tmp.9")), 11);
    touch(&c.p(&format!("{d}/big.hpp.staging.123")), 13);
    // not counted: nested directories and what they hold, symlinks
    touch(&c.p(&format!("{d}/sub/nested.gch")), 1_000_000);
    fs::create_dir_all(c.p(&format!("{d}/big.hpp.gch.lockdir"))).unwrap();
    symlink(c.p(&format!("{d}/big.hpp.gch")), c.p(&format!("{d}/alias.gch"))).unwrap();
    let s = scan(CasKind::Pch, &c.cell);
    assert_eq!(five(&s), (base + 7 + 11 + 13, 1, 1, 0, 0));
    assert_eq!(s.anomalies, Anomalies::default());
}

#[test]
fn pch_entry_rules_and_grouping() {
    let c = Cell::new();
    // two command hashes for one header: a duplicate group
    write(
        &c.p("aaaaaaaaaaaaaaaa/manifest.json"),
        &pch_manifest("/p/big.hpp"),
    );
    touch(&c.p("aaaaaaaaaaaaaaaa/big.hpp.gch"), 1000);
    write(
        &c.p("bbbbbbbbbbbbbbbb/manifest.json"),
        &pch_manifest("/p/big.hpp"),
    );
    touch(&c.p("bbbbbbbbbbbbbbbb/big.hpp.gch"), 3000);
    let m = pch_manifest("/p/big.hpp").len() as u64;
    // an empty command-hash dir is an entry (0 bytes, its own unknown key)
    fs::create_dir_all(c.p("cccccccccccccccc")).unwrap();
    // ignored: symlinked command dir, upper-case / wrong-length names, files
    let outside = c.root.join("outside");
    touch(&outside.join("x.gch"), 500);
    symlink(&outside, c.p("dddddddddddddddd")).unwrap();
    touch(&c.p("EEEEEEEEEEEEEEEE/x.gch"), 500);
    touch(&c.p("eeeeeeeeeeeeeee/x.gch"), 500);
    touch(&c.p("ffffffffffffffff"), 500);
    let s = scan(CasKind::Pch, &c.cell);
    let (a, b) = (1000 + m, 3000 + m);
    assert_eq!(five(&s), (a + b, 3, 2, b, 1));
    assert_eq!(s.anomalies.symlinked_dirs_ignored, 1);
    assert_eq!(s.anomalies.manifests_missing, 1);
}

/// Manifest variants of formats.md §6.8 → (content, counter it must bump).
fn broken_manifests(field: &str) -> Vec<(Vec<u8>, &'static str)> {
    vec![
        (b"{not json".to_vec(), "manifests_invalid"),
        (b"".to_vec(), "manifests_invalid"),
        (b"null".to_vec(), "manifests_invalid"),
        (b"[1]".to_vec(), "manifests_crash_compat"),
        (b"5".to_vec(), "manifests_crash_compat"),
        (
            [format!("{{\"{field}\": \"/p/").as_bytes(), b"\xff.hpp\"}"].concat(),
            "manifests_crash_compat",
        ),
        (
            format!(r#"{{"{field}": [1]}}"#).into_bytes(),
            "manifests_crash_compat",
        ),
        (
            format!(r#"{{"{field}": {{"a": 1}}}}"#).into_bytes(),
            "manifests_crash_compat",
        ),
        (
            format!(r#"{{"{field}": 5}}"#).into_bytes(),
            "manifests_non_string_key",
        ),
        (
            format!(r#"{{"{field}": true}}"#).into_bytes(),
            "manifests_non_string_key",
        ),
        (
            format!(r#"{{"{field}": ""}}"#).into_bytes(),
            "manifests_without_key",
        ),
        (
            format!(r#"{{"{field}": null}}"#).into_bytes(),
            "manifests_without_key",
        ),
        (br#"{"other": "/p/x.hpp"}"#.to_vec(), "manifests_without_key"),
    ]
}

fn counter(a: &Anomalies, name: &str) -> u64 {
    a.counters()
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .unwrap()
}

#[test]
fn pch_and_pcm_broken_manifests_fall_back_to_unknown_keys() {
    for (kind, field) in [(CasKind::Pch, "header_realpath"), (CasKind::Pcm, "bucket_key")] {
        let cases = broken_manifests(field);
        let c = Cell::new();
        for (i, (content, _)) in cases.iter().enumerate() {
            let dir = format!("{i:016x}");
            write(&c.p(&format!("{dir}/manifest.json")), content);
            touch(&c.p(&format!("{dir}/x.bmi")), 100);
        }
        let manifest_bytes: u64 = cases.iter().map(|(m, _)| m.len() as u64).sum();
        let s = scan(kind, &c.cell);
        let n = cases.len() as u64;
        // every entry is its own <unknown:cmd_hash> bucket: no duplicates
        assert_eq!(five(&s), (100 * n + manifest_bytes, n, n, 0, 0), "{kind}");
        for name in [
            "manifests_invalid",
            "manifests_crash_compat",
            "manifests_non_string_key",
            "manifests_without_key",
        ] {
            let want = cases.iter().filter(|(_, c)| *c == name).count() as u64;
            assert_eq!(counter(&s.anomalies, name), want, "{kind} {name}");
        }
    }
}

#[test]
fn pch_numeric_keys_are_not_grouped_unlike_compiletools() {
    // compiletools would use 5 verbatim as the key of both entries (one
    // bucket, one duplicate group, wasted 100); formats.md §6.8 leaves it to
    // judgement and we treat non-strings as missing: two unknown buckets.
    let c = Cell::new();
    for d in ["aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"] {
        write(&c.p(&format!("{d}/manifest.json")), br#"{"header_realpath": 5}"#);
        touch(&c.p(&format!("{d}/x.gch")), 100);
    }
    let s = scan(CasKind::Pch, &c.cell);
    assert_eq!(five(&s), (2 * (100 + 22), 2, 2, 0, 0));
    assert_eq!(s.anomalies.manifests_non_string_key, 2);
}

#[test]
fn pcm_uses_bucket_key_and_ignores_the_module_mapper() {
    let c = Cell::new();
    write(&c.p(".module-mapper.txt"), b"mapper");
    let m1 =
        br#"{"bucket_key": "/src/foo.cppm", "stage": "clang_module_interface", "header_realpath": "/x"}"#;
    let m2 = br#"{"bucket_key": "/src/foo.cppm", "stage": "clang_module_interface"}"#;
    let m3 = br#"{"bucket_key": "<vector>", "stage": "gcc_header_unit"}"#;
    write(&c.p("aaaaaaaaaaaaaaaa/manifest.json"), m1);
    touch(&c.p("aaaaaaaaaaaaaaaa/foo.pcm"), 400);
    write(&c.p("bbbbbbbbbbbbbbbb/manifest.json"), m2);
    touch(&c.p("bbbbbbbbbbbbbbbb/foo.pcm"), 500);
    write(&c.p("cccccccccccccccc/manifest.json"), m3);
    touch(&c.p("cccccccccccccccc/vector.gcm"), 900);
    let (a, b, v) = (
        400 + m1.len() as u64,
        500 + m2.len() as u64,
        900 + m3.len() as u64,
    );
    let s = scan(CasKind::Pcm, &c.cell);
    assert_eq!(five(&s), (a + b + v, 3, 2, a.max(b), 1));
    // the same cell read as pch: no header_realpath in two manifests
    let p = scan(CasKind::Pch, &c.cell);
    assert_eq!((p.unique_buckets, p.duplicate_groups), (3, 0));
}

#[test]
fn unknown_key_text_shares_the_key_namespace_like_compiletools() {
    // A manifest naming "<unknown:bbbbbbbbbbbbbbbb>" groups with the
    // manifest-less entry bbbbbbbbbbbbbbbb, because compiletools keys are
    // plain strings.
    let c = Cell::new();
    write(
        &c.p("aaaaaaaaaaaaaaaa/manifest.json"),
        br#"{"header_realpath": "<unknown:bbbbbbbbbbbbbbbb>"}"#,
    );
    fs::create_dir_all(c.p("bbbbbbbbbbbbbbbb")).unwrap();
    let s = scan(CasKind::Pch, &c.cell);
    assert_eq!((s.total_entries, s.unique_buckets, s.duplicate_groups), (2, 1, 1));
}

// ----------------------------------------------------------------------- exe

fn exe_manifest(source: &str) -> Vec<u8> {
    format!(r#"{{"source_realpath": "{source}"}}"#).into_bytes()
}

#[test]
fn exe_link_key_variants_spec_example() {
    // formats.md §6.7: two link-key variants of one executable, 1000 and 1100.
    let c = Cell::new();
    for (lk, size) in [(LK1, 1000), (LK2, 1100)] {
        let e = c.p(&format!("{}/main_{lk}.exe", &lk[..2]));
        touch(&e, size);
        write(
            &PathBuf::from(format!("{}.manifest", e.display())),
            &exe_manifest("/p/src/main.cpp"),
        );
        // sidecars: ignored
        touch(&PathBuf::from(format!("{}.lock", e.display())), 0);
        touch(&PathBuf::from(format!("{}.result", e.display())), 0);
        touch(
            &PathBuf::from(format!("{}.e3b0c44298fc1c14.result", e.display())),
            0,
        );
        touch(
            &PathBuf::from(format!("{}.e3b0c44298fc1c14.xml", e.display())),
            3000,
        );
    }
    let s = scan(CasKind::Exe, &c.cell);
    assert_eq!(five(&s), (2100, 2, 1, 1100, 1));
    assert_eq!(s.anomalies, Anomalies::default());
}

#[test]
fn exe_entry_rules_suffixes_and_unknown_keys() {
    let c = Cell::new();
    // same source, .a and .so: different buckets (suffix is in the key)
    touch(&c.p("cc/libfoo.a_cccc.a"), 10);
    write(&c.p("cc/libfoo.a_cccc.a.manifest"), &exe_manifest("/p/foo.cpp"));
    touch(&c.p("cc/libfoo.so_cccc.so"), 20);
    write(&c.p("cc/libfoo.so_cccc.so.manifest"), &exe_manifest("/p/foo.cpp"));
    // manifest-less: same basename+suffix group, other basename apart
    touch(&c.p("aa/tool_aaaa.exe"), 100);
    touch(&c.p("ab/tool_abab.exe"), 300);
    touch(&c.p("ac/other_acac.exe"), 50);
    // accepted odd names: empty link key, underscore-rich basename
    touch(&c.p("ad/x_.exe"), 1);
    touch(&c.p("ad/my_long_name_k.exe"), 2);
    // legacy CA sibling: its own entry with basename "<base>_<64hex>"
    touch(&c.p(&format!("a1/libbar.a_{LK1}_0123456789abcdef0123.a")), 40);
    // ignored names and files
    touch(&c.p("ad/_k.exe"), 1000);
    touch(&c.p("ad/nokey.exe"), 1000);
    touch(&c.p("ad/x.publish.tmp"), 1000);
    touch(&c.p("ad/tool_k.exe.lock.excl"), 1000);
    touch(&c.p("ad/tool_k.EXE"), 1000);
    fs::create_dir_all(c.p("ad/dir_k.exe")).unwrap(); // not a regular file
    touch(&c.p("ad/deeper/tool_k.exe"), 1000); // nested deeper
    touch(&c.p("AD/tool_k.exe"), 1000); // upper-case shard
    touch(&c.p("tool_k.exe"), 1000); // top level
    let s = scan(CasKind::Exe, &c.cell);
    // buckets: (foo,.a) (foo,.so) (<unknown:tool:.exe>) (<unknown:other:.exe>)
    //          (<unknown:x:.exe>) (<unknown:my_long_name:.exe>) (<unknown:libbar.a_<lk>:.a>)
    assert_eq!(five(&s), (10 + 20 + 100 + 300 + 50 + 1 + 2 + 40, 8, 7, 300, 1));
    assert_eq!(s.anomalies.manifests_missing, 6);
}

#[test]
fn exe_symlinks_are_ignored() {
    let c = Cell::new();
    touch(&c.p("aa/tool_aaaa.exe"), 100);
    symlink(c.p("aa/tool_aaaa.exe"), c.p("aa/tool_bbbb.exe")).unwrap();
    symlink(c.root.join("missing"), c.p("aa/tool_cccc.exe")).unwrap();
    let outside = c.root.join("outside");
    touch(&outside.join("tool_dddd.exe"), 100);
    symlink(&outside, c.p("dd")).unwrap();
    let s = scan(CasKind::Exe, &c.cell);
    assert_eq!(five(&s), (100, 1, 1, 0, 0));
    assert_eq!(s.anomalies.exe_symlinks_ignored, 2);
    assert_eq!(s.anomalies.symlinked_dirs_ignored, 1);
}

#[test]
fn exe_broken_manifests_fall_back_to_unknown_keys() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"".to_vec(), "manifests_invalid"), // torn write (formats.md §6.6)
        (b"{\"source_realpath\": \"/p/ma".to_vec(), "manifests_invalid"),
        (b"null".to_vec(), "manifests_invalid"),
        (b"[1]".to_vec(), "manifests_crash_compat"),
        (b"5".to_vec(), "manifests_crash_compat"),
        (
            b"{\"source_realpath\": \"/p/\xff\"}".to_vec(),
            "manifests_crash_compat",
        ),
        (br#"{"source_realpath": 5}"#.to_vec(), "manifests_non_string_key"),
        (
            br#"{"source_realpath": ["/p/main.cpp"]}"#.to_vec(),
            "manifests_non_string_key",
        ),
        (br#"{"source_realpath": ""}"#.to_vec(), "manifests_without_key"),
    ];
    let c = Cell::new();
    for (i, (content, _)) in cases.iter().enumerate() {
        // same basename for all: unknown keys group them all together
        let e = c.p(&format!("{i:02x}/main_{i:02x}.exe"));
        touch(&e, 100 + i as u64);
        write(&PathBuf::from(format!("{}.manifest", e.display())), content);
    }
    let s = scan(CasKind::Exe, &c.cell);
    let n = cases.len() as u64;
    let total: u64 = (0..n).map(|i| 100 + i).sum();
    assert_eq!(five(&s), (total, n, 1, total - 100, 1));
    for name in [
        "manifests_invalid",
        "manifests_crash_compat",
        "manifests_non_string_key",
        "manifests_without_key",
    ] {
        let want = cases.iter().filter(|(_, c)| *c == name).count() as u64;
        assert_eq!(counter(&s.anomalies, name), want, "{name}");
    }
}

// ------------------------------------------------------- limits and errors

#[test]
fn warnings_are_capped_and_counted() {
    let c = Cell::new();
    fs::create_dir_all(c.p("0d")).unwrap();
    for i in 0..5 {
        symlink(
            c.root.join("missing"),
            c.p(&format!("0d/{}", obj(&format!("b{i}"), F1, D1, M1))),
        )
        .unwrap();
    }
    let limits = ScanLimits {
        max_warnings: 2,
        ..ScanLimits::default()
    };
    let s = scan_store_with(CasKind::Obj, &c.cell, &CancelToken::new(), limits).unwrap();
    assert_eq!(s.anomalies.stat_failures, 5);
    assert_eq!((s.warnings.len(), s.warnings_suppressed), (2, 3));
    assert!(s.warnings[0].path.starts_with(&c.cell));
}

#[test]
fn oversized_manifest_is_not_read() {
    let c = Cell::new();
    let m = pch_manifest("/p/big.hpp");
    for d in ["aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"] {
        write(&c.p(&format!("{d}/manifest.json")), &m);
    }
    let limits = ScanLimits {
        max_manifest_bytes: 10,
        ..ScanLimits::default()
    };
    let s = scan_store_with(CasKind::Pch, &c.cell, &CancelToken::new(), limits).unwrap();
    // sizes still count the manifests; keys fall back to unknown
    assert_eq!(five(&s), (2 * m.len() as u64, 2, 2, 0, 0));
    assert_eq!(s.anomalies.manifests_skipped, 2);
}

#[test]
fn unreadable_shard_is_skipped_and_unreadable_cell_is_an_error() {
    // As root (CI) the body runs in a child process as `nobody`.
    unprivileged::run_unprivileged(
        "cas_edge::unreadable_shard_is_skipped_and_unreadable_cell_is_an_error",
        || {
            use std::os::unix::fs::PermissionsExt;
            let c = Cell::new();
            touch(&c.p(&format!("0d/{}", obj("a", F1, D1, M1))), 10);
            touch(&c.p(&format!("71/{}", obj("b", F2, D1, M1))), 20);
            fs::set_permissions(c.p("0d"), fs::Permissions::from_mode(0o000)).unwrap();
            let s = scan(CasKind::Obj, &c.cell);
            fs::set_permissions(c.p("0d"), fs::Permissions::from_mode(0o755)).unwrap();
            assert_eq!(five(&s), (20, 1, 1, 0, 0));
            assert_eq!(s.anomalies.unreadable_dirs, 1);

            fs::set_permissions(&c.cell, fs::Permissions::from_mode(0o000)).unwrap();
            let r = scan_store(CasKind::Obj, &c.cell, &CancelToken::new());
            fs::set_permissions(&c.cell, fs::Permissions::from_mode(0o755)).unwrap();
            assert!(matches!(r, Err(Error::Io { .. })), "{r:?}");
        },
    );
}

#[test]
fn parallel_scans_equal_the_serial_scan_exactly() {
    // Enough members for several threads; anomalies beyond the warning cap
    // so that the kept warnings must not depend on scheduling.
    let c = Cell::new();
    for i in 0..200u64 {
        let shard = format!("{:02x}", i % 256);
        let file = format!("{shard}{:010x}", i % 150); // some sources twice
        touch(
            &c.p(&format!("{shard}/{}", obj("s", &file, D1, &format!("{i:016x}")))),
            100 + i,
        );
        if i % 3 == 0 {
            symlink(
                c.root.join("missing"),
                c.p(&format!("{shard}/{}", obj("b", &file, D1, M3))),
            )
            .unwrap();
        }
    }
    for i in 0..80u64 {
        let d = format!("{i:016x}");
        let header = format!("/p/h{}.hpp", i % 50);
        let manifest = if i % 7 == 0 {
            b"[1]".to_vec()
        } else {
            pch_manifest(&header)
        };
        write(&c.root.join(format!("pch/{d}/manifest.json")), &manifest);
        touch(&c.root.join(format!("pch/{d}/x.gch")), 1000 + i);
    }
    for i in 0..100u64 {
        let e = c.root.join(format!("exe/{:02x}/tool{}_{i:x}.exe", i, i % 40));
        touch(&e, 10 + i);
        if i % 5 == 0 {
            write(&PathBuf::from(format!("{}.manifest", e.display())), b"5");
        }
    }
    let limits = |threads| ScanLimits {
        max_threads: threads,
        max_warnings: 10,
        ..ScanLimits::default()
    };
    for (kind, cell) in [
        (CasKind::Obj, c.cell.clone()),
        (CasKind::Pch, c.root.join("pch")),
        (CasKind::Exe, c.root.join("exe")),
    ] {
        let serial = scan_store_with(kind, &cell, &CancelToken::new(), limits(1)).unwrap();
        assert!(
            serial.total_entries > 0 && serial.warnings_suppressed > 0,
            "{kind}: {serial:?}"
        );
        for threads in [2, 4, 8] {
            let parallel = scan_store_with(kind, &cell, &CancelToken::new(), limits(threads)).unwrap();
            assert_eq!(parallel, serial, "{kind} with {threads} threads");
        }
    }
}
