//! An independent, deliberately naive reading of a corpus statslog: what
//! per-TU attribution must give. The corpus files are clean (`\n` line
//! ends, no stray whitespace), so a few lines of std suffice; the real
//! parser's Python rules are unit-tested in the crate.

use std::collections::HashMap;
use std::path::Path;

const PRIMARY: [&str; 3] = ["direct_cache_hit", "preprocessed_cache_hit", "cache_miss"];

/// Source path → the primary event of its last block (`None`: that block
/// had none).
#[derive(Debug, Clone, Default)]
pub struct PerTu(HashMap<String, Option<String>>);

impl PerTu {
    pub fn from_file(path: &Path) -> Self {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut map: HashMap<String, Option<String>> = HashMap::new();
        let mut current: Option<String> = None;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix('#') {
                let source = rest.strip_prefix(' ').unwrap_or(rest).to_owned();
                // A new block of the same source replaces the earlier one.
                map.insert(source.clone(), None);
                current = Some(source);
            } else if let Some(source) = &current {
                let slot = map.get_mut(source).expect("inserted with the header");
                if slot.is_none() && PRIMARY.contains(&line) {
                    *slot = Some(line.to_owned());
                }
            }
        }
        map.remove("");
        Self(map)
    }

    /// The outcome attribution must give a compile rule of `source`.
    pub fn outcome(&self, source: &str) -> Option<&str> {
        self.0.get(source).and_then(|o| o.as_deref())
    }
}

/// `ct.rule.cache_layer` for a primary event.
pub fn layer_of(outcome: &str) -> &'static str {
    if outcome == "cache_miss" {
        "compiled"
    } else {
        "ccache"
    }
}
