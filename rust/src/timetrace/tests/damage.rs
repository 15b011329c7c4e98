//! Random byte damage to real traces never panics the parse or the rollup:
//! every damaged file is an error or a model the rollup takes.

use super::corpus_traces;
use crate::timetrace::{parse_trace, Rollup, TraceLimits};

/// xorshift64*: reproducible without a dependency; the seed is printed on
/// failure by the assertion messages.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Bytes a JSON reader reacts to, more likely than chance would pick them.
const TOKENS: &[u8] = b"{}[]\",:0123456789-.eE\\ntfu\xff\x00 ";

fn damage(rng: &mut Rng, bytes: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        if bytes.is_empty() {
            bytes.push(b'{');
        }
        let at = rng.below(bytes.len());
        match rng.below(6) {
            0 => bytes[at] = TOKENS[rng.below(TOKENS.len())],
            1 => bytes[at] = rng.next() as u8,
            2 => {
                let end = (at + 1 + rng.below(64)).min(bytes.len());
                bytes.drain(at..end);
            }
            3 => {
                let token = TOKENS[rng.below(TOKENS.len())];
                bytes.insert(at, token);
            }
            4 => {
                let end = (at + 1 + rng.below(256)).min(bytes.len());
                let copy: Vec<u8> = bytes[at..end].to_vec();
                let to = rng.below(bytes.len());
                bytes.splice(to..to, copy);
            }
            _ => bytes.truncate(at),
        }
    }
}

#[test]
fn random_damage_never_panics() {
    let originals: Vec<Vec<u8>> = corpus_traces()
        .iter()
        .take(8)
        .map(|f| std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display())))
        .collect();
    let limits = [
        TraceLimits::default(),
        TraceLimits {
            max_bytes: 1 << 20,
            max_events: 50,
            max_depth: 3,
        },
    ];
    let mut rng = Rng(0x7151_ce7a_ce00_0025);
    let (mut parsed, mut refused) = (0u32, 0u32);
    let mut rollup = Rollup::default();
    for case in 0..1500u32 {
        let mut bytes = originals[case as usize % originals.len()].clone();
        damage(&mut rng, &mut bytes);
        let limit = &limits[case as usize % limits.len()];
        match parse_trace(&bytes, limit) {
            Ok(unit) => {
                parsed += 1;
                rollup.add("damaged.json", &unit);
                let _ = unit.compile_span_us();
            }
            Err(e) => {
                refused += 1;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    let text = rollup.report().to_string();
    assert!(!text.is_empty());
    // Both outcomes are exercised: damage that misses every structural byte
    // still parses, most other damage does not.
    assert!(parsed > 50 && refused > 50, "parsed {parsed}, refused {refused}");
}
