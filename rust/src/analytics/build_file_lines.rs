//! The logical lines of a build file, read as a stream: a generated
//! `build.ninja` of 100k rules is ~165 MB (ct-cake writes each command in
//! full), nearly all of it command text the graph does not need, so it is
//! never held in memory whole — one line at a time, in a reused buffer.
//!
//! A line ending in an odd number of `escape` bytes (`$` for ninja, `\` for
//! make) continues on the next, whose indentation is dropped (make puts one
//! space in its place). `\r` before a newline is dropped.

use std::io::{BufRead, Read};

use super::dep_graph::GraphError;

/// Longest logical line (continuations joined) read, in bytes (issue 22):
/// a line is held whole, so without a bound one line of continuations —
/// or a file without a newline — would be held whole. ct-cake's longest
/// lines (a link step's inputs) are far shorter; a longer one gives up the
/// graph.
pub(crate) const MAX_LINE_BYTES: usize = 8 << 20;

/// Reads logical lines from `reader`.
pub struct LogicalLines<R> {
    reader: R,
    escape: u8,
    join_with_space: bool,
    physical: Vec<u8>,
    logical: Vec<u8>,
    number: usize,
}

impl<R: BufRead> LogicalLines<R> {
    pub fn new(reader: R, escape: u8, join_with_space: bool) -> Self {
        Self {
            reader,
            escape,
            join_with_space,
            physical: Vec::new(),
            logical: Vec::new(),
            number: 0,
        }
    }

    /// The next logical line and the number of its first physical line;
    /// `None` at the end.
    pub fn next_line(&mut self) -> Result<Option<(usize, &[u8])>, GraphError> {
        if !self.read_physical()? {
            return Ok(None);
        }
        let start = self.number;
        let first = trim_newline(&self.physical);
        if !self.continues(first) {
            // Most lines: no copy beyond the reader's.
            let len = first.len();
            return Ok(Some((start, &self.physical[..len])));
        }
        self.logical.clear();
        self.logical.extend_from_slice(&first[..first.len() - 1]);
        while self.read_physical()? {
            let mut line = trim_newline(&self.physical);
            let indent = line.iter().take_while(|b| b.is_ascii_whitespace()).count();
            line = &line[indent..];
            if self.join_with_space {
                self.logical.push(b' ');
            }
            if self.logical.len().saturating_add(line.len()) > MAX_LINE_BYTES {
                return Err(too_long(start));
            }
            if self.continues(line) {
                self.logical.extend_from_slice(&line[..line.len() - 1]);
            } else {
                self.logical.extend_from_slice(line);
                break;
            }
        }
        Ok(Some((start, &self.logical)))
    }

    /// The next physical line into `physical`; false at the end.
    fn read_physical(&mut self) -> Result<bool, GraphError> {
        self.physical.clear();
        // One byte past the bound tells a line that is too long.
        let read = (&mut self.reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut self.physical)
            .map_err(|e| GraphError::new(format!("read error: {e}")))?;
        if read > 0 {
            self.number += 1;
        }
        if self.physical.len() > MAX_LINE_BYTES {
            return Err(too_long(self.number));
        }
        Ok(read > 0)
    }

    /// Ends in an odd number of escape bytes: the last one escapes the newline.
    fn continues(&self, line: &[u8]) -> bool {
        line.iter().rev().take_while(|&&b| b == self.escape).count() % 2 == 1
    }
}

fn too_long(line: usize) -> GraphError {
    GraphError::new(format!("line {line}: a line longer than {MAX_LINE_BYTES} bytes"))
}

fn trim_newline(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &[u8], escape: u8, space: bool) -> Vec<(usize, String)> {
        let mut lines = LogicalLines::new(text, escape, space);
        let mut out = Vec::new();
        while let Some((n, l)) = lines.next_line().unwrap() {
            out.push((n, String::from_utf8_lossy(l).into_owned()));
        }
        out
    }

    #[test]
    fn continuations_join_and_numbers_follow_physical_lines() {
        assert_eq!(
            all(b"a $\n   b$$\n  c $\r\n\td\ne", b'$', false),
            [
                (1, "a b$$".to_owned()),
                (3, "  c d".to_owned()),
                (5, "e".to_owned())
            ]
        );
        assert_eq!(
            all(b"x: a \\\n    b\n\tcmd \\\\\nlast\\", b'\\', true),
            [
                (1, "x: a  b".to_owned()),
                (3, "\tcmd \\\\".to_owned()),
                (4, "last".to_owned())
            ]
        );
        assert!(all(b"", b'$', false).is_empty());
    }

    #[test]
    fn a_line_past_the_bound_is_an_error_not_an_allocation() {
        let mut continued = b"build x: r ".to_vec();
        // Each physical line adds 3 bytes ("in ") to the logical one.
        while continued.len() <= 3 * MAX_LINE_BYTES {
            continued.extend_from_slice(b"in $\n ");
        }
        continued.extend_from_slice(b"end\n");
        let mut lines = LogicalLines::new(&continued[..], b'$', false);
        match lines.next_line() {
            Err(err) => assert!(err.0.contains("longer than"), "{err}"),
            Ok(line) => panic!("a line of {:?} bytes was joined", line.map(|(_, l)| l.len())),
        }
        assert!(lines.logical.capacity() <= 2 * MAX_LINE_BYTES);

        let nuls = vec![0u8; MAX_LINE_BYTES + 10];
        let mut lines = LogicalLines::new(&nuls[..], b'$', false);
        assert!(lines.next_line().is_err(), "one physical line past the bound");
        assert!(lines.physical.len() <= MAX_LINE_BYTES + 1);
    }
}
