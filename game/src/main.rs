//! `twice`: the game. Parses the command line and assembles the plugins; nothing else.

use bevy::prelude::*;

fn main() -> AppExit {
    let options = match twice::options::Options::from_command_line() {
        Ok(options) => options,
        Err(exit) => return exit,
    };
    let paths = match twice::paths::GamePaths::resolve(&options) {
        Ok(paths) => paths,
        Err(error) => {
            eprintln!("error: {error}");
            return AppExit::from_code(2);
        }
    };
    App::new().add_plugins(twice::AppPlugin { options, paths }).run()
}
