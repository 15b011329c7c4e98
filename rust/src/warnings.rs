//! Collecting the non-fatal oddities of one build without letting a
//! pathological file turn them into an unbounded list.

/// Most warning lines kept per build; the rest are only counted, because a
/// file with 100k broken events must not produce 100k log lines.
pub(crate) const MAX_WARNINGS: usize = 50;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Warnings {
    kept: Vec<String>,
    suppressed: u64,
}

impl Warnings {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, message: impl Into<String>) {
        if self.kept.len() < MAX_WARNINGS {
            self.kept.push(message.into());
        } else {
            self.suppressed += 1;
        }
    }

    pub fn extend(&mut self, other: Warnings) {
        for w in other.kept {
            self.push(w);
        }
        self.suppressed += other.suppressed;
    }

    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// The kept lines, plus one line counting the suppressed ones.
    pub fn into_lines(self) -> Vec<String> {
        let mut lines = self.kept;
        if self.suppressed > 0 {
            lines.push(format!("{} more warning(s) suppressed", self.suppressed));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_and_counts() {
        let mut w = Warnings::new();
        for i in 0..MAX_WARNINGS + 3 {
            w.push(format!("w{i}"));
        }
        let lines = w.into_lines();
        assert_eq!(lines.len(), MAX_WARNINGS + 1);
        assert_eq!(lines.last().unwrap(), "3 more warning(s) suppressed");
    }
}
