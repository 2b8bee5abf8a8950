//! What the game's headless tests share: the campaign's levels and the game without a window.

use std::path::{Path, PathBuf};

use bevy::prelude::*;
use bevy::state::app::StatesPlugin;
use twice::CorePlugin;
use twice::paths::GamePaths;

/// The campaign's levels, as the game finds them.
pub fn levels_folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../levels")
}

/// The game without a window (`MinimalPlugins`, the screens' state machine and the session),
/// with an empty profile in `data`, after its first frame.
pub fn game(data: &Path) -> App {
    game_with(data, |_| {})
}

/// [`game`], with `before` run on the app before its plugins are added: resources it inserts
/// (the presenter's mode, say) are the ones the plugins find, not their defaults.
pub fn game_with(data: &Path, before: impl FnOnce(&mut App)) -> App {
    let mut app = App::new();
    before(&mut app);
    app.add_plugins((
        MinimalPlugins,
        StatesPlugin,
        CorePlugin {
            paths: GamePaths {
                levels: levels_folder(),
                data: data.to_path_buf(),
            },
        },
    ));
    app.update();
    app
}
