//! "Zoo" stores: one cell per kind holding every edge case of formats.md §6 on
//! which compiletools does *not* crash, for the differential test against
//! the real `ct-cache-report`.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

pub fn touch(path: &Path, size: u64) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::File::create(path).unwrap().set_len(size).unwrap();
}

pub fn write(path: &Path, content: &[u8]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

const F1: &str = "0d99ae76451a";
const F2: &str = "71d46a082188";
const D1: &str = "0af5b42cc55ffb";
const M: [&str; 4] = [
    "d85fc71f180bdf74",
    "1111111111111111",
    "2222222222222222",
    "3333333333333333",
];

fn obj(basename: &str, file: &str, mac: &str) -> String {
    format!("{basename}_{file}_{D1}_{mac}.o")
}

/// obj cell: groups, name filters, Python `$`, non-UTF-8, symlinks, a
/// directory named like an object, nesting.
pub fn obj_zoo(cell: &Path, outside: &Path) {
    let o = |rel: &str| cell.join(rel);
    touch(&o(&format!("0d/{}", obj("foo", F1, M[0]))), 100);
    touch(&o(&format!("0d/{}", obj("foo", F1, M[1]))), 150);
    touch(&o(&format!("0d/{}", obj("foo_renamed", F1, M[2]))), 120);
    touch(&o(&format!("ff/{}", obj("bar", F2, M[0]))), 7);
    for sidecar in [
        ".lock",
        ".lock.excl",
        ".12345.ab12.tmp",
        ".compiletools.tmp",
        ".compiletools.tmp.7",
    ] {
        touch(&o(&format!("ff/{}{sidecar}", obj("bar", F2, M[0]))), 50);
    }
    fs::create_dir_all(o(&format!("ff/{}.lockdir", obj("bar", F2, M[0])))).unwrap();
    touch(&o(&format!("0D/{}", obj("up", F2, M[1]))), 50);
    touch(&o(&format!("0d0/{}", obj("three", F2, M[1]))), 50);
    touch(&o(&obj("top", F2, M[1])), 50);
    touch(&o(".ct-traces.json"), 50);
    touch(&o(&format!("0d/sub/{}", obj("deep", F2, M[1]))), 50);
    touch(&o(&format!("0d/{}", obj("x", "0D99AE76451A", M[1]))), 50);
    touch(&o("0d/_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.o"), 50);
    // Python `$`: "ab\n" is a shard, "ab\n\n" is not
    touch(&o(&format!("ab\n/{}", obj("nl", F2, M[2]))), 13);
    touch(&o(&format!("ab\n\n/{}", obj("nl2", F2, M[3]))), 17);
    // non-UTF-8 basename
    let mut name = b"\xff\xfe".to_vec();
    name.extend_from_slice(format!("_{F2}_{D1}_{}.o", M[3]).as_bytes());
    touch(&o("ab").join(OsStr::from_bytes(&name)), 33);
    // symlinked shard (ignored), symlink in shard (followed), broken one
    touch(&outside.join(obj("viashard", F2, M[0])), 1000);
    symlink(outside, o("ee")).unwrap();
    let target = outside.join("target.o");
    touch(&target, 5000);
    symlink(&target, o(&format!("0d/{}", obj("link", F1, M[3])))).unwrap();
    symlink(
        outside.join("missing"),
        o(&format!("0d/{}", obj("broken", F2, "4444444444444444"))),
    )
    .unwrap();
    // a directory named like an object (counted with its st_size)
    let dir = o(&format!("cd/{}", obj("dir", "cd0000000000", M[0])));
    fs::create_dir_all(&dir).unwrap();
    touch(&dir.join("inner.o"), 999);
}

fn pch_manifest(field: &str, value: &str) -> Vec<u8> {
    format!(r#"{{"compiler": "g++", "{field}": "{value}", "transitive_hashes": {{"/p/h.hpp": "abc"}}}}"#)
        .into_bytes()
}

/// pch or pcm cell (`field` = `header_realpath` / `bucket_key`): sizes,
/// grouping, every manifest variant compiletools survives.
pub fn cmd_hash_zoo(cell: &Path, outside: &Path, field: &str) {
    let c = |rel: &str| cell.join(rel);
    // a full entry: artefact, staged header, manifest, lock, temps, and
    // things not counted (nested dir, symlink)
    let d = "56dff7d27b514966";
    touch(&c(&format!("{d}/big.hpp.gch")), 29_787_480);
    touch(&c(&format!("{d}/big.hpp")), 49);
    write(
        &c(&format!("{d}/manifest.json")),
        &pch_manifest(field, "/p/util/big.hpp"),
    );
    touch(&c(&format!("{d}/big.hpp.gch.lock")), 0);
    touch(&c(&format!("{d}/manifest.json.tmp.123")), 7);
    touch(&c(&format!("{d}/big.hpp.gch.compiletools.tmp.9")), 11);
    touch(&c(&format!("{d}/sub/nested.gch")), 1_000_000);
    symlink(c(&format!("{d}/big.hpp.gch")), c(&format!("{d}/alias.gch"))).unwrap();
    // a second configuration of the same header: duplicate group
    write(
        &c("aaaaaaaaaaaaaaaa/manifest.json"),
        &pch_manifest(field, "/p/util/big.hpp"),
    );
    touch(&c("aaaaaaaaaaaaaaaa/big.hpp.gch"), 3000);
    // empty entry, symlinked entry, wrong names
    fs::create_dir_all(c("bbbbbbbbbbbbbbbb")).unwrap();
    touch(&outside.join("x.gch"), 500);
    symlink(outside, c("cccccccccccccccc")).unwrap();
    touch(&c("DDDDDDDDDDDDDDDD/x.gch"), 500);
    touch(&c("ddddddddddddddd/x.gch"), 500);
    touch(&c("eeeeeeeeeeeeeeee"), 500);
    touch(&c(".module-mapper.txt"), 500);
    // Python `$`: a trailing newline still names an entry
    touch(&c("abababababababab\n/x.gch"), 21);
    // manifests compiletools reads without crashing → unknown keys
    let variants: Vec<Vec<u8>> = vec![
        b"{not json".to_vec(),
        b"".to_vec(),
        b"null".to_vec(),
        b"\xef\xbb\xbf{}".to_vec(),
        format!(r#"{{"{field}": ""}}"#).into_bytes(),
        format!(r#"{{"{field}": null}}"#).into_bytes(),
        format!(r#"{{"{field}": 0}}"#).into_bytes(),
        format!(r#"{{"{field}": false}}"#).into_bytes(),
        format!(r#"{{"{field}": []}}"#).into_bytes(),
        format!(r#"{{"{field}": {{}}}}"#).into_bytes(),
        br#"{"other": "/p/x.hpp"}"#.to_vec(),
        // the same key twice in one object: the last wins
        format!(r#"{{"{field}": "/p/first.hpp", "{field}": "/p/util/big.hpp"}}"#).into_bytes(),
        // unknown-key text shared with a real key
        format!(r#"{{"{field}": "<unknown:bbbbbbbbbbbbbbbb>"}}"#).into_bytes(),
    ];
    for (i, m) in variants.iter().enumerate() {
        let dir = format!("f{i:015x}");
        write(&c(&format!("{dir}/manifest.json")), m);
        touch(&c(&format!("{dir}/x.bmi")), 100 + i as u64);
    }
    // a directory named manifest.json: open() fails with an OSError
    fs::create_dir_all(c("9999999999999999/manifest.json")).unwrap();
    // a symlinked manifest: compiletools follows it, we refuse it (no read
    // outside the roots) and count it as missing
    write(&outside.join("m.json"), &pch_manifest(field, "/p/util/big.hpp"));
    fs::create_dir_all(c("8888888888888888")).unwrap();
    symlink(outside.join("m.json"), c("8888888888888888/manifest.json")).unwrap();
}

fn exe_manifest(source: &str) -> Vec<u8> {
    format!(r#"{{"source_realpath": "{source}"}}"#).into_bytes()
}

/// exe cell: link-key variants, suffixes, unknown keys, odd names, CA
/// sibling, sidecars, symlinks, manifests compiletools survives.
pub fn exe_zoo(cell: &Path, outside: &Path) {
    let e = |rel: &str| cell.join(rel);
    let lk1 = format!("a1ef{}7e", "0".repeat(58));
    let lk2 = format!("a1ff{}7e", "0".repeat(58));
    for (lk, size) in [(&lk1, 1000), (&lk2, 1100)] {
        let p = e(&format!("{}/main_{lk}.exe", &lk[..2]));
        touch(&p, size);
        write(&with_suffix(&p, ".manifest"), &exe_manifest("/p/src/main.cpp"));
        for s in [".lock", ".result", ".e3b0c44298fc1c14.result"] {
            touch(&with_suffix(&p, s), 0);
        }
        touch(&with_suffix(&p, ".e3b0c44298fc1c14.xml"), 3000);
    }
    touch(&e("cc/libfoo.a_cccc.a"), 10);
    write(&e("cc/libfoo.a_cccc.a.manifest"), &exe_manifest("/p/foo.cpp"));
    touch(&e("cc/libfoo.so_cccc.so"), 20);
    write(&e("cc/libfoo.so_cccc.so.manifest"), &exe_manifest("/p/foo.cpp"));
    touch(&e("aa/tool_aaaa.exe"), 100);
    touch(&e("ab/tool_abab.exe"), 300);
    touch(&e("ac/other_acac.exe"), 50);
    touch(&e("ad/x_.exe"), 1);
    touch(&e("ad/my_long_name_k.exe"), 2);
    touch(&e(&format!("a1/libbar.a_{lk1}_0123456789abcdef0123.a")), 40);
    for ignored in [
        "ad/_k.exe",
        "ad/nokey.exe",
        "ad/x.publish.tmp",
        "ad/tool_k.exe.lock.excl",
        "ad/tool_k.EXE",
    ] {
        touch(&e(ignored), 1000);
    }
    fs::create_dir_all(e("ad/dir_k.exe")).unwrap();
    touch(&e("ad/deeper/tool_k.exe"), 1000);
    touch(&e("AD/tool_k.exe"), 1000);
    touch(&e("tool_k.exe"), 1000);
    symlink(e("aa/tool_aaaa.exe"), e("aa/tool_bbbb.exe")).unwrap();
    symlink(outside.join("missing"), e("aa/tool_cccc.exe")).unwrap();
    touch(&outside.join("tool_dddd.exe"), 100);
    symlink(outside, e("dd")).unwrap();
    // manifests compiletools survives → unknown key (all basename "torn")
    let variants: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"{\"source_realpath\": \"/p/ma".to_vec(),
        b"null".to_vec(),
        br#"{"source_realpath": 5}"#.to_vec(),
        br#"{"source_realpath": ["/p/main.cpp"]}"#.to_vec(),
        br#"{"source_realpath": {"a": 1}}"#.to_vec(),
        br#"{"source_realpath": ""}"#.to_vec(),
    ];
    for (i, m) in variants.iter().enumerate() {
        let p = e(&format!("e{i:x}/torn_e{i:x}.exe"));
        touch(&p, 200 + i as u64);
        write(&with_suffix(&p, ".manifest"), m);
    }
}
