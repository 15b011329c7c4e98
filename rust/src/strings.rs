//! String helpers that belong to no layer: the parsers and the encoders
//! both cut strings to a byte length.

/// Shortens `s` to at most `max` bytes without splitting a character.
pub fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate("abcdef", 3), "abc");
        assert_eq!(truncate("ab", 3), "ab");
        assert_eq!(truncate("aé", 2), "a"); // é is 2 bytes
        assert_eq!(truncate("€", 2), "");
        assert_eq!(truncate("", 0), "");
    }
}
