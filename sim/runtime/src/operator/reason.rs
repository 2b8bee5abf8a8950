//! The one rule for an operator's reason: printable text someone can read back later.

/// The most characters (Unicode scalar values) a reason may have.
pub const REASON_CHARS_MAX: usize = 2_000;

/// Why a reason is refused. A reason goes into the record's history and is shown later, raw,
/// in terminals (`sqlite3`, `curl`), consoles and logs, so it must be printable text:
///
/// - 1 to [`REASON_CHARS_MAX`] characters;
/// - no control character but tab and line feed, which lay text out and move nothing already
///   shown (carriage return overwrites a line, ESC starts a terminal command, NUL cuts C strings);
/// - no bidirectional formatting character (U+202A–U+202E, U+2066–U+2069): they reorder how
///   the rest of the line reads;
/// - at least one character that shows: a reason of only spaces and invisible characters
///   (zero-width space, byte order mark, word joiner, …) says nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReasonError {
    #[error("say why (it goes into the record's history); it must not be empty")]
    /// Nothing was said.
    Empty,
    #[error("{chars} characters, more than the {REASON_CHARS_MAX} allowed")]
    /// Longer than a history entry keeps.
    TooLong {
        /// How many characters it has.
        chars: usize,
    },
    #[error(
        "character {position} is the control character U+{code_point:04X}; a reason is printable text \
         (tab and line feed are the only control characters allowed)"
    )]
    /// A control character other than tab or line feed.
    ControlCharacter {
        /// Where, counting characters from 1.
        position: usize,
        /// The character's code point.
        code_point: u32,
    },
    #[error(
        "character {position} is U+{code_point:04X}, a bidirectional formatting character that \
         reorders how the text is shown"
    )]
    /// A character that reorders how the text is shown (the "Trojan Source" trick).
    BidirectionalFormatting {
        /// Where, counting characters from 1.
        position: usize,
        /// The character's code point.
        code_point: u32,
    },
    #[error("only spaces and invisible characters: say why in words someone can read")]
    /// Nothing a reader could see.
    Invisible,
}

/// Checks that `reason` is printable text an operator can read back later (see [`ReasonError`]).
/// Every console (an HTTP API, a terminal, a simulation) goes through this one rule.
///
/// # Errors
///
/// [`ReasonError`] naming what is wrong: an empty reason, one longer than the limit, or one holding
/// a character a terminal would not show.
pub fn check_reason(reason: &str) -> Result<(), ReasonError> {
    if reason.is_empty() {
        return Err(ReasonError::Empty);
    }
    let chars = reason.chars().count();
    if chars > REASON_CHARS_MAX {
        return Err(ReasonError::TooLong { chars });
    }
    let mut shows = false;
    // Positions count from 1, as a person counts characters.
    for (position, character) in (1..).zip(reason.chars()) {
        let code_point = u32::from(character);
        if character.is_control() && !matches!(character, '\t' | '\n') {
            return Err(ReasonError::ControlCharacter { position, code_point });
        }
        if is_bidirectional_formatting(character) {
            return Err(ReasonError::BidirectionalFormatting { position, code_point });
        }
        shows |= !character.is_whitespace() && !is_invisible(character);
    }
    if shows { Ok(()) } else { Err(ReasonError::Invisible) }
}

/// Embeddings, overrides and isolates: they change the order in which the text around them is
/// drawn ("Trojan Source").
fn is_bidirectional_formatting(character: char) -> bool {
    matches!(character, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Characters that draw nothing: Unicode's `Default_Ignorable_Code_Point` (DerivedCoreProperties,
/// Unicode 15.1; zero-width spaces and joiners, the byte order mark, soft hyphen, variation
/// selectors, tags, fillers), plus the braille blank U+2800, which renders as an empty cell.
/// Whitespace is told apart by `char::is_whitespace`.
fn is_invisible(character: char) -> bool {
    matches!(
        character,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{2800}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_printable_text() {
        for reason in [
            "billing shows cr_0001",
            "x",
            "checked with Ada\n\tshe confirmed",
            "é ✓ 中文 🙂",
            "a\u{200B}b",
            &"x".repeat(REASON_CHARS_MAX),
        ] {
            assert_eq!(check_reason(reason), Ok(()), "{reason:?}");
        }
    }

    #[test]
    fn control_invisible_reordering_and_overlong_reasons_are_refused() {
        let too_long = "é".repeat(REASON_CHARS_MAX + 1);
        let cases: [(&str, ReasonError); 14] = [
            ("", ReasonError::Empty),
            (" \n\t ", ReasonError::Invisible),
            ("\u{200B}", ReasonError::Invisible),
            ("\u{FEFF}\u{2060}\u{00A0}\u{3000}", ReasonError::Invisible),
            ("\u{E0020}\u{FE0F}\u{2800}", ReasonError::Invisible),
            (
                "ok\r",
                ReasonError::ControlCharacter {
                    position: 3,
                    code_point: 0x0D,
                },
            ),
            (
                "\u{1B}[2Jok",
                ReasonError::ControlCharacter {
                    position: 1,
                    code_point: 0x1B,
                },
            ),
            (
                "a\0b",
                ReasonError::ControlCharacter {
                    position: 2,
                    code_point: 0,
                },
            ),
            (
                "a\u{7F}",
                ReasonError::ControlCharacter {
                    position: 2,
                    code_point: 0x7F,
                },
            ),
            (
                "a\u{9B}31m",
                ReasonError::ControlCharacter {
                    position: 2,
                    code_point: 0x9B,
                },
            ),
            (
                "a\u{0B}b",
                ReasonError::ControlCharacter {
                    position: 2,
                    code_point: 0x0B,
                },
            ),
            (
                "paid \u{202E}0001rc",
                ReasonError::BidirectionalFormatting {
                    position: 6,
                    code_point: 0x202E,
                },
            ),
            (
                "\u{2067}x",
                ReasonError::BidirectionalFormatting {
                    position: 1,
                    code_point: 0x2067,
                },
            ),
            (
                too_long.as_str(),
                ReasonError::TooLong {
                    chars: REASON_CHARS_MAX + 1,
                },
            ),
        ];
        for (reason, expected) in cases {
            assert_eq!(check_reason(reason), Err(expected), "{reason:?}");
        }
    }
}
