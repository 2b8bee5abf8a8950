//! What the drill's commands say of a flag they refuse (`twice-sim drill`, `twice-sim worker`):
//! which flag, and why, in a sentence that names it.

/// A flag a drill command refuses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    /// A number outside the range the command allows.
    #[error("--{flag} {value} is outside {low}..={high}")]
    OutOfRange {
        /// The flag, without its dashes.
        flag: &'static str,
        /// What was given.
        value: u32,
        /// The least it may be.
        low: u32,
        /// The most it may be.
        high: u32,
    },
    /// A value the command cannot use, or flags that do not go together.
    #[error("{detail}")]
    Invalid {
        /// The flag, without its dashes.
        flag: &'static str,
        /// Why, in a sentence that starts with the flag.
        detail: String,
    },
}

impl FlagError {
    /// Flag `flag` refused for `detail` (a sentence that starts with the flag).
    pub fn invalid(flag: &'static str, detail: impl Into<String>) -> FlagError {
        FlagError::Invalid {
            flag,
            detail: detail.into(),
        }
    }
}

/// `value` of flag `flag` within `low..=high`, or the error that says it is not.
pub fn within(flag: &'static str, value: u32, low: u32, high: u32) -> Result<(), FlagError> {
    if value < low || value > high {
        return Err(FlagError::OutOfRange { flag, value, low, high });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_flag_is_named_with_its_range() {
        assert_eq!(
            within("runs", 0, 1, 500).unwrap_err().to_string(),
            "--runs 0 is outside 1..=500"
        );
        assert!(within("runs", 1, 1, 500).is_ok() && within("runs", 500, 1, 500).is_ok());
    }
}
