//! Words a player reads, made the same way everywhere: money in dollars, and the runtime's
//! messages without the backticks it quotes statuses in. Kept apart so the simulator, the
//! checker and the debrief can all use them without depending on one another.

/// `$25.00` from cents.
pub fn dollars(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    format!("{sign}${}.{:02}", cents.abs() / 100, cents.abs() % 100)
}

/// Runtime text for a player: the runtime's messages quote statuses in backticks, which read
/// as stray marks on screen.
pub fn plain(text: &str) -> String {
    text.replace('`', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_show_cents_and_sign() {
        assert_eq!(dollars(2500), "$25.00");
        assert_eq!(dollars(-5), "-$0.05");
        assert_eq!(plain("recorded `failed`"), "recorded failed");
    }
}
