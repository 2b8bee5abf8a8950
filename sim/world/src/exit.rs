//! Exit codes, defined once for every command.

/// Everything as expected.
pub const EXIT_OK: u8 = 0;
/// A verdict differs from the one expected (`play`, `replay`, `explore`'s confirmation).
pub const EXIT_DIFFERS: u8 = 1;
/// The command ran and found a failure: a drill's broken promise, nothing found, a server
/// that could not start for a reason other than its input.
pub const EXIT_FAILED: u8 = 1;
/// Bad input: a malformed level or tape, a bad flag, a file that is not what it should be.
pub const EXIT_BAD_INPUT: u8 = 2;
/// The reader of standard output went away (`twice-sim play … | head -2`): 128 + SIGPIPE, the
/// status a shell shows for a command line tool killed by the broken pipe.
pub const EXIT_BROKEN_PIPE: u8 = 141;
/// Interrupted by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: u8 = 130;

/// What a search (`explore`, `defend`) is expected to come to, so CI can hold either way: a
/// heist found (the bug still reproduces) or none (the defence holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// A heist is found: exit 0 when one is, 1 when none is.
    Found,
    /// No heist is found: exit 0 when none is, 1 when one is.
    None,
}

impl Expect {
    /// The exit code of a search that did (or did not) find a heist.
    pub fn exit(self, found: bool) -> u8 {
        if found == (self == Expect::Found) {
            EXIT_OK
        } else {
            EXIT_DIFFERS
        }
    }

    /// Reads `found` or `none`, as `--expect` takes it.
    pub fn parse(text: &str) -> Result<Expect, String> {
        match text {
            "found" => Ok(Expect::Found),
            "none" => Ok(Expect::None),
            other => Err(format!("`{other}` is not an expectation: `found` or `none`")),
        }
    }
}
