//! The bounds every reader of untrusted input honours. A leaf: the parsers
//! (`timing`, `statslog`, `outcomes`, `live`) take them without depending on
//! the request types above them; a [`crate::BuildRequest`] carries one.

/// Bounds on untrusted input; exceeding one is an error, never a crash or an
/// unbounded allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest `timing.json` (and side file) read, in bytes.
    pub max_file_bytes: u64,
    /// Most events (phases + rules) in one build.
    pub max_events: u64,
    /// Deepest nesting of events below the root.
    pub max_depth: u32,
    /// Longest string attribute value kept, in bytes; longer ones are cut.
    pub max_attribute_len: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_bytes: 256 * 1024 * 1024,
            max_events: 1_000_000,
            max_depth: 64,
            max_attribute_len: 4096,
        }
    }
}
