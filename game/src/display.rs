//! Whether there is a display to open the window on. Without one (an SSH session, CI) winit
//! panics deep inside the event loop (exit 101, a backtrace); the game says so in one line
//! and exits 2 instead, before anything else starts.

use std::ffi::OsString;

/// The variables winit reads to find an X11 or Wayland display.
pub const DISPLAY_VARIABLES: [&str; 3] = ["DISPLAY", "WAYLAND_DISPLAY", "WAYLAND_SOCKET"];

/// Why no window can open, if none can: on Linux and the BSDs winit needs one of
/// [`DISPLAY_VARIABLES`] (set and not empty). `variable` reads the environment (a parameter,
/// so tests need not change the process's own).
pub fn missing_display(variable: impl Fn(&str) -> Option<OsString>) -> Option<String> {
    if !cfg!(all(
        unix,
        not(target_os = "macos"),
        not(target_os = "ios"),
        not(target_os = "android")
    )) {
        return None;
    }
    let present = DISPLAY_VARIABLES
        .iter()
        .any(|name| variable(name).is_some_and(|value| !value.is_empty()));
    (!present).then(|| {
        "no display: twice opens a window, but neither DISPLAY nor WAYLAND_DISPLAY is set \
         (an SSH session or CI?); run it on a desktop, with `ssh -X`, or as `xvfb-run -a twice` \
         (`twice-sim` plays and replays levels without a window)"
            .to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn environment(set: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let set: Vec<(String, OsString)> = set
            .iter()
            .map(|(name, value)| ((*name).to_owned(), OsString::from(value)))
            .collect();
        move |name| {
            set.iter()
                .find(|(candidate, _)| candidate == name)
                .map(|(_, value)| value.clone())
        }
    }

    #[test]
    #[cfg(all(unix, not(target_os = "macos")))]
    fn no_display_variable_or_an_empty_one_is_no_display() {
        let problem = missing_display(environment(&[])).expect("no display");
        assert!(problem.contains("DISPLAY") && problem.contains("xvfb-run"), "{problem}");
        assert!(missing_display(environment(&[("DISPLAY", "")])).is_some());
    }

    #[test]
    fn any_display_variable_is_a_display() {
        for name in DISPLAY_VARIABLES {
            assert_eq!(missing_display(environment(&[(name, ":99")])), None, "{name}");
        }
    }
}
