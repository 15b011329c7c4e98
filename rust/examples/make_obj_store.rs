//! Creates a synthetic object CAS cell for benchmarks (formats.md §6.3 layout).
//!
//! ```text
//! cargo run --release --example make_obj_store -- <cell> <entries> [--variants-every K] [--no-locks] [--seed S]
//! ```
//!
//! `<entries>` object files named `<basename>_<file_hash:12>_<dep_hash:14>_<macro:16>.o`
//! in their `file_hash[:2]` shard, each with the `.o.lock` sidecar real
//! stores carry (so a listing sees two files per entry, as in the corpus),
//! as sparse files of 4 KiB–512 KiB. Every K-th entry (default 10) is an
//! extra macro-state variant of the previous source (same file/dep hash,
//! different size), so duplicate groups and waste are non-trivial.
//! Deterministic for a given seed. The cell must not exist yet.

use std::fs;
use std::path::PathBuf;
use std::process::ExitCode;

/// splitmix64: small, deterministic, good enough for names and sizes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn hex(&mut self, len: usize) -> String {
        let mut s = String::with_capacity(len);
        while s.len() < len {
            s.push_str(&format!("{:016x}", self.next()));
        }
        s.truncate(len);
        s
    }
}

const WORDS: &[&str] = &[
    "vec2",
    "vec3",
    "mat3",
    "hull",
    "parse",
    "util",
    "stats",
    "rng",
    "bbox",
    "polygon",
    "segment",
    "circle",
    "triangle",
    "transform",
    "area",
    "perimeter",
    "intersect",
    "simplify",
    "svg",
    "centroid",
    "test_vec",
    "test_hull",
    "geomtool",
    "hullbench",
    "wordfreq",
    "tokenizer",
    "stemmer",
    "kwic",
    "normalize",
    "wc",
];

struct Args {
    cell: PathBuf,
    entries: u64,
    variants_every: u64,
    locks: bool,
    seed: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let usage = "usage: make_obj_store <cell> <entries> [--variants-every K] [--no-locks] [--seed S]";
    let cell = PathBuf::from(it.next().ok_or(usage)?);
    let entries = it
        .next()
        .ok_or(usage)?
        .parse()
        .map_err(|e| format!("entries: {e}"))?;
    let mut args = Args {
        cell,
        entries,
        variants_every: 10,
        locks: true,
        seed: 1,
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--no-locks" => args.locks = false,
            "--variants-every" => {
                args.variants_every = it.next().ok_or(usage)?.parse().map_err(|e| format!("K: {e}"))?;
            }
            "--seed" => {
                args.seed = it
                    .next()
                    .ok_or(usage)?
                    .parse()
                    .map_err(|e| format!("seed: {e}"))?
            }
            other => return Err(format!("unknown argument {other:?}\n{usage}")),
        }
    }
    Ok(args)
}

fn run(args: &Args) -> Result<(), String> {
    if args.cell.exists() {
        return Err(format!(
            "{} exists; refusing to write into it",
            args.cell.display()
        ));
    }
    let io = |what: &str, e: std::io::Error| format!("{what}: {e}");
    let mut rng = Rng(args.seed);
    let mut previous: Option<(String, String, String)> = None; // basename, file, dep
    let mut sources = 0u64;
    for i in 0..args.entries {
        let variant = args.variants_every > 0 && i % args.variants_every == args.variants_every - 1;
        let (basename, file, dep) = match (&previous, variant) {
            (Some(p), true) => p.clone(),
            _ => {
                sources += 1;
                let word = WORDS[(rng.next() % WORDS.len() as u64) as usize];
                (format!("{word}{sources}"), rng.hex(12), rng.hex(14))
            }
        };
        let name = format!("{basename}_{file}_{dep}_{}.o", rng.hex(16));
        let shard = args.cell.join(&file[..2]);
        fs::create_dir_all(&shard).map_err(|e| io(&shard.display().to_string(), e))?;
        let path = shard.join(&name);
        let size = 4096 + rng.next() % (512 * 1024 - 4096);
        let f = fs::File::create(&path).map_err(|e| io(&path.display().to_string(), e))?;
        f.set_len(size).map_err(|e| io(&path.display().to_string(), e))?;
        if args.locks {
            let lock = shard.join(format!("{name}.lock"));
            fs::File::create(&lock).map_err(|e| io(&lock.display().to_string(), e))?;
        }
        previous = Some((basename, file, dep));
    }
    println!(
        "{}: {} entries ({} sources){}",
        args.cell.display(),
        args.entries,
        sources,
        if args.locks { ", with .lock sidecars" } else { "" }
    );
    Ok(())
}

fn main() -> ExitCode {
    match parse_args().and_then(|a| run(&a)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
