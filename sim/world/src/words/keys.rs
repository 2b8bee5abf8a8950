//! The level screen's keys, one list for both editions: the window's `?` overlay draws every
//! row, the browser's `?` list the rows it has (its `index.html` is held to them by a test in
//! twice-serve). Where both editions have an action it has the same key in both; a newcomer's
//! playtest found S stepping in the browser and saving in the window.

/// One row of the keys' help.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyRow {
    /// The key or keys, as the help shows them: "Space", ". or →".
    pub keys: &'static str,
    /// What it does in the window.
    pub window: &'static str,
    /// What it does in the browser; `None`: the browser has no such action (no rulebook, no
    /// glossary, no files to load).
    pub browser: Option<&'static str>,
}

const fn both(keys: &'static str, does: &'static str) -> KeyRow {
    KeyRow {
        keys,
        window: does,
        browser: Some(does),
    }
}

const fn window(keys: &'static str, does: &'static str) -> KeyRow {
    KeyRow {
        keys,
        window: does,
        browser: None,
    }
}

/// Every key of the level screen, in the order the help lists them.
pub const LEVEL_KEYS: [KeyRow; 30] = [
    both("Space", "play / pause"),
    both(". or →", "step one phase of one actor"),
    both(", or ←", "rewind one phase"),
    both("Home", "rewind to the start (your moves are undone)"),
    window("G", "go to a phase: type it, Enter"),
    window("H", "open the next hint: a nudge, the idea, the move"),
    window("B", "the rulebook: the runtime's decision tables, the rows that fired"),
    window(
        "C",
        "the code: the runtime's loop as this level runs it, a cursor per worker; click a line to aim a crash",
    ),
    window(
        "T",
        "the glossary: phase, started, indeterminate and the other words; underlined words open it",
    ),
    KeyRow {
        keys: "D",
        window: "the tool declaration, in levels that let you declare a tool: a draft and the contract check's verdict",
        browser: Some("the tool declaration, in levels that let you declare a tool: its first choice"),
    },
    window(
        "P",
        "the side panels (task, guards, ledger, operator) on or off; off at first with --presenter",
    ),
    window(
        "N",
        "the presenter notes for this chapter: what to say, what to ask the room",
    ),
    both("+ / −", "faster / slower"),
    both("E", "run to the end"),
    KeyRow {
        keys: "V",
        window: "predict, then watch: will the heist work, and which guard decides it (before the run plays out)",
        browser: Some("predict, then watch: the verdict you predict, and which guard decides it"),
    },
    KeyRow {
        keys: "R",
        window: "restart with a fresh ledger file",
        browser: Some("restart from phase 0 with a fresh ledger"),
    },
    both("1 – 9", "play the card with that number"),
    window("1 – 9 in a chooser", "pick the target; Esc cancels"),
    window("↑ / ↓", "select a ledger row (its history shows below)"),
    KeyRow {
        keys: "O",
        window: "operator: type a reason, Enter, then pick the move",
        browser: Some("operator: type a reason, then pick the move"),
    },
    both("S", "save the tape of what you did"),
    window("L", "load a tape (opens the replay viewer)"),
    both("Enter", "debrief, once the level is over"),
    KeyRow {
        keys: "Esc",
        window: "close a dialog, or pause: resume, restart, save or leave",
        browser: Some("close a dialog, or back to the levels (the run stays open to carry on)"),
    },
    both("? or F1", "this list"),
    window("mouse", "everything above has a button too"),
    window("double-click", "a timeline row: rewind to just after it"),
    window("click", "a ledger row: its history"),
    window("sqlite3", "open the ledger file shown in the ledger panel"),
    window("twice-sim", "replay a saved tape: twice-sim replay FILE"),
];

/// The rows the browser's help lists: (keys, what they do there), in order.
pub fn browser_keys() -> impl Iterator<Item = (&'static str, &'static str)> {
    LEVEL_KEYS
        .iter()
        .filter_map(|row| row.browser.map(|does| (row.keys, does)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_does_one_thing_in_each_edition() {
        for (index, row) in LEVEL_KEYS.iter().enumerate() {
            assert!(
                LEVEL_KEYS[index + 1..].iter().all(|other| other.keys != row.keys),
                "{} is listed twice",
                row.keys
            );
        }
        // The keys a playtest found doing different things: step, save, rewind.
        let browser: Vec<(&str, &str)> = browser_keys().collect();
        assert!(browser.contains(&(". or →", "step one phase of one actor")));
        assert!(browser.contains(&("S", "save the tape of what you did")));
        assert!(browser.contains(&(", or ←", "rewind one phase")));
    }
}
