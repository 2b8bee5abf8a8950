//! Errors about the player's and designer's input: they name the file, the line and
//! the column, and what was expected.

use std::path::{Path, PathBuf};

/// A problem with an input file (a level or a tape).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", path.display(), position.map(|(line, column)| format!(":{line}:{column}")).unwrap_or_default())]
pub struct InputError {
    pub path: PathBuf,
    /// 1-based line and column, when the problem has a place.
    pub position: Option<(usize, usize)>,
    pub message: String,
}

impl InputError {
    pub fn new(path: &Path, position: Option<(usize, usize)>, message: impl Into<String>) -> InputError {
        InputError {
            path: path.to_path_buf(),
            position,
            message: message.into(),
        }
    }

    /// Places the error at the `nth` (0-based) occurrence of `needle` in `text`.
    pub fn at(path: &Path, text: &str, needle: &str, nth: usize, message: impl Into<String>) -> InputError {
        InputError::new(path, locate(text, needle, nth), message)
    }
}

/// Line and column (1-based) of the `nth` occurrence of `needle`, skipping `//` comments.
pub fn locate(text: &str, needle: &str, nth: usize) -> Option<(usize, usize)> {
    if needle.is_empty() {
        return None;
    }
    let mut seen = 0;
    for (line_index, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut from = 0;
        while let Some(offset) = code[from..].find(needle) {
            let column = from + offset;
            if seen == nth {
                return Some((line_index + 1, code[..column].chars().count() + 1));
            }
            seen += 1;
            from = column + needle.len();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_finds_the_nth_occurrence_outside_comments() {
        let text = "a: 1, // at_phase\n  at_phase: 2,\n  at_phase: 3";
        assert_eq!(locate(text, "at_phase", 0), Some((2, 3)));
        assert_eq!(locate(text, "at_phase", 1), Some((3, 3)));
        assert_eq!(locate(text, "at_phase", 2), None);
    }

    #[test]
    fn display_names_file_line_and_column() {
        let error = InputError::new(Path::new("levels/x.level.ron"), Some((3, 7)), "expected a number");
        assert_eq!(error.to_string(), "levels/x.level.ron:3:7: expected a number");
    }
}
